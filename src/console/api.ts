/**
 * The daemon's HTTP API as the console calls it: same origin, JSON, the bearer token on every call
 * when one was given, and the API's own error message on a failure (spec section 7: `{"error": …}`).
 */
import { errorOf } from "./event-stream.ts";

/** Shared with the docs page (`/docs`), so a token given to one serves the other. */
const TOKEN_KEY = "swarmd.token";

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export const savedToken = (): string | null => sessionStorage.getItem(TOKEN_KEY);
export const saveToken = (token: string): void => sessionStorage.setItem(TOKEN_KEY, token);
export const forgetToken = (): void => sessionStorage.removeItem(TOKEN_KEY);

/** Told to the page (app.tsx), which then asks for the token again. */
export const UNAUTHORIZED_EVENT = "swarmd:unauthorized";
export const tokenRefused = (): void => void dispatchEvent(new Event(UNAUTHORIZED_EVENT));

export async function api<T>(
  method: "GET" | "POST" | "DELETE",
  path: string,
  body?: unknown,
  signal?: AbortSignal,
): Promise<T> {
  const headers: Record<string, string> = {};
  const token = savedToken();
  if (token) headers.authorization = `Bearer ${token}`;
  if (body !== undefined) headers["content-type"] = "application/json";
  let response: Response;
  try {
    response = await fetch(path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      cache: "no-store",
      signal,
    });
  } catch (err) {
    throw new ApiError(
      0,
      `The daemon did not answer ${method} ${path}: ${err instanceof Error ? err.message : String(err)}`,
    );
  }
  if (!response.ok) {
    if (response.status === 401) tokenRefused();
    throw new ApiError(response.status, await errorOf(response));
  }
  return (response.status === 204 ? undefined : await response.json()) as T;
}
