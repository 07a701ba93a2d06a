/**
 * The two ways a call to swarmd fails, kept apart because callers act differently on them: a
 * `ServiceError` is the service's own answer (fix the request), a `ServiceUnreachableError` means
 * nothing answered in time at the configured address (start the service or fix `SWARM_URL`).
 */

/** The service answered with an error status; `message` is its `{"error": ...}` text. */
export class ServiceError extends Error {
  readonly status: number;
  readonly method: string;
  readonly path: string;

  constructor(status: number, message: string, request: { method: string; path: string }) {
    super(message);
    this.name = "ServiceError";
    this.status = status;
    this.method = request.method;
    this.path = request.path;
  }
}

/** No answer at the service address: refused, reset, unresolvable, or silent past the timeout. */
export class ServiceUnreachableError extends Error {
  readonly url: string;
  readonly reason: "unreachable" | "timeout";

  constructor(url: string, reason: "unreachable" | "timeout", message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "ServiceUnreachableError";
    this.url = url;
    this.reason = reason;
  }
}

export function isServiceError(err: unknown): err is ServiceError {
  return err instanceof ServiceError;
}

export function isUnreachable(err: unknown): err is ServiceUnreachableError {
  return err instanceof ServiceUnreachableError;
}

/** `SWARM_URL` (or `--url`) is not an http(s) URL: a configuration mistake, not an outage. */
export class EndpointError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "EndpointError";
  }
}

/** A saved-spec cache failure a user can fix: an invalid name or spec, or no spec of that name. */
export class SpecStoreError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "SpecStoreError";
  }
}

/** The event stream sent what the client will not hold (a message over its size limit); reconnecting would not help. */
export class EventStreamError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "EventStreamError";
  }
}
