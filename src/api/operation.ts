import { z } from "zod";

/**
 * One route of the API as data: what it takes (path, query, headers, body: the zod schemas the
 * route parses with), what it answers (the zod schemas of its answers) and what it refuses. The
 * OpenAPI document is generated from these, the client builds its requests from them, and the
 * bridge's tools are made from them (`tools.ts`).
 */
export interface Operation {
  method: "get" | "post" | "delete";
  /** OpenAPI form: `/runs/{runId}`. Each `{name}` is one of `PATH_PARAMS` (fields.ts). */
  path: string;
  operationId: string;
  tag: "service" | "runs" | "agents" | "approvals" | "events" | "models" | "nodes" | "mcp";
  summary: string;
  description?: string;
  /** Needs no bearer token (`src/http/auth.ts`). */
  open?: true;
  /** The zod schema the route parses its query with; every member says what it is (`.describe`). */
  query?: z.ZodObject;
  /** Request headers the route reads, with the zod schema it parses each with. */
  headers?: Readonly<Record<string, { schema: z.ZodType; describe: string }>>;
  /**
   * The zod schema the route parses its body with; `optional` when the body may be left out;
   * `examples`, by name, bodies that work as they are (ids aside: `EXAMPLE_IDS` stand for the
   * caller's), which the document offers (`/docs`' "Try it out" starts from the first).
   */
  body?: { schema: z.ZodType; optional?: true; examples: Readonly<Record<string, BodyExample>> };
  ok: Readonly<Record<number, Answer>>;
  /** The refusals particular to this route (spec section 7) with their conditions; the document adds those every route shares. */
  errors: Readonly<Record<number, string>>;
}

/** A request body that works as it is, but for its ids (`EXAMPLE_IDS`), with what it shows. */
export interface BodyExample {
  summary: string;
  value: unknown;
}

/**
 * A success answer: a JSON body (a zod schema; with `stream`, a client that asks for it gets a
 * `text/event-stream` instead, each message's data one of `stream`), a body of another media type,
 * or none.
 */
export type Answer = { description: string } & (
  | { json: z.ZodType; stream?: z.ZodType }
  | { media: string; schema: Readonly<Record<string, unknown>> }
  | { empty: true }
);

/**
 * A route's body: its schema, examples checked against that schema's input type, and whether it
 * may be left out.
 */
export const requestBody = <S extends z.ZodType, const Optional extends true | undefined = undefined>(
  schema: S,
  examples: Readonly<Record<string, { summary: string; value: z.input<S> }>>,
  optional?: Optional,
) =>
  ({ schema, examples, ...(optional ? { optional } : {}) }) as {
    schema: S;
    examples: typeof examples;
  } & (Optional extends true ? { optional: true } : unknown);

/** Declares an operation, keeping its literal path and exact schemas in its type. */
export const operation = <const O extends Operation>(op: O): O => op;

/** `"/agents/{agentId}/permissions/{requestId}"` → `"agentId" | "requestId"`. */
export type ParamNames<P extends string> = P extends `${string}{${infer N}}${infer Rest}`
  ? N | ParamNames<Rest>
  : never;

/** A route's path parameters, in order. */
export const paramNames = (path: string): string[] => [...path.matchAll(/\{(\w+)\}/g)].map((match) => match[1] ?? "");

type NoFields = Record<never, never>;

/** The object a body schema parses, under `.prefault` (an optional body) if any. */
type ObjectShape<B> = B extends z.ZodPrefault<infer I> ? ObjectShape<I> : B extends z.ZodObject<infer S> ? S : NoFields;
export type BodyShape<O> = O extends { body: { schema: infer B } } ? ObjectShape<B> : NoFields;
export type BodySchema<O> = O extends { body: { schema: infer B extends z.ZodType } } ? B : never;

/** The object schema a body schema parses with, under `.prefault` if any; undefined for any other body. */
export function bodyObject(schema: z.ZodType): z.ZodObject | undefined {
  if (schema instanceof z.ZodPrefault) return bodyObject(schema.unwrap() as z.ZodType);
  return schema instanceof z.ZodObject ? schema : undefined;
}

/**
 * A query member as a value rather than the text of a URL: `limit` is the number it parses to,
 * with its default and optionality kept (`queryInteger` in fields.ts).
 */
export type QueryValue<T> =
  T extends z.ZodDefault<infer I>
    ? z.ZodDefault<QueryValue<I>>
    : T extends z.ZodOptional<infer I>
      ? z.ZodOptional<QueryValue<I>>
      : T extends z.ZodPipe<z.ZodType, infer Out>
        ? Out
        : T;
export type QueryShape<O> = O extends { query: z.ZodObject<infer S> } ? { [K in keyof S]: QueryValue<S[K]> } : NoFields;

/** The value schema of a query member (see `QueryValue`), its description kept. */
export function queryValue(schema: z.ZodType): z.ZodType {
  let value: z.ZodType;
  if (schema instanceof z.ZodDefault) value = queryValue(schema.unwrap() as z.ZodType).default(schema.def.defaultValue);
  else if (schema instanceof z.ZodOptional) value = queryValue(schema.unwrap() as z.ZodType).optional();
  else if (schema instanceof z.ZodPipe) value = schema.out as z.ZodType;
  else value = schema;
  return schema.description === undefined ? value : value.describe(schema.description);
}

/** What a client sends on a route: its path parameters, query values and body (any of them, for a route not known). */
export type RouteRequest<O extends Operation> = string extends O["path"]
  ? { params?: Record<string, string>; query?: Record<string, unknown>; body?: unknown }
  : ([ParamNames<O["path"]>] extends [never]
      ? { params?: undefined }
      : { params: { [K in ParamNames<O["path"]>]: string } }) & {
      query?: { [K in keyof QueryShape<O>]?: z.input<QueryShape<O>[K] & z.ZodType> };
      body?: [BodySchema<O>] extends [never] ? undefined : z.input<BodySchema<O>>;
    };

type AnswerValue<A> = A extends { json: infer S extends z.ZodType }
  ? z.output<S>
  : A extends { empty: true }
    ? undefined
    : unknown;
/** What the route answers on success: the union of its JSON answers (`undefined` for an empty one). */
export type AnswerOf<O extends Operation> = AnswerValue<O["ok"][keyof O["ok"]]>;
