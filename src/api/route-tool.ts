import type { ToolAnnotations } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import { PATH_PARAMS, type PathParamName } from "./fields.ts";
import {
  type BodyShape,
  bodyObject,
  type Operation,
  type ParamNames,
  paramNames,
  type QueryShape,
  queryValue,
  type RouteRequest,
} from "./operation.ts";
import { rulesOf, toolMessageOf } from "./rules.ts";

/**
 * A tool of the bridge made from a route: its input is every field of the route (path
 * parameters, query values and body members, with the route's own schemas), so a field added
 * to a route's schema reaches the tool, its description and its request with no other edit.
 * What a tool changes is declared per field (`FieldOptions`); fields of the tool's own that the
 * route does not take (`extra`) are never sent.
 */

type NoFields = Record<never, never>;

/** How a tool presents one field of its route. */
export interface FieldOptions {
  /** The tool's name for it (`wait` → `waitSeconds`). */
  as?: string;
  /** What the model is told, in place of the route's description (which the tool otherwise shows). */
  describe?: string;
  /** Optional in the tool although the route requires it: the tool fills it in (`spec` from `specName`). */
  optional?: true;
  /** Offered without the route's `null` (which lifts a cap). */
  withoutNull?: true;
  /** The tool's default where the route has none (the service's own default, stated for the model). */
  default?: number | boolean | string;
}

/** Every field a route takes, by its name in the route. */
export type RouteFields<O extends Operation> = { [K in ParamNames<O["path"]>]: z.ZodString } & QueryShape<O> &
  BodyShape<O>;
export type FieldMap<O extends Operation> = { [K in keyof RouteFields<O>]?: FieldOptions };

type Renamed<K, F> = K extends keyof F ? (F[K] extends { as: infer A extends string } ? A : K) : K;
type WithoutNull<T> =
  T extends z.ZodOptional<z.ZodNullable<infer I extends z.ZodType>>
    ? z.ZodOptional<I>
    : T extends z.ZodNullable<infer I>
      ? I
      : T;
type Required<T> = T extends z.ZodOptional<infer I> ? I : T;
type Adjusted<T, F> = F extends { withoutNull: true }
  ? Adjusted<WithoutNull<T>, Omit<F, "withoutNull">>
  : F extends { default: unknown }
    ? z.ZodDefault<Required<T> & z.ZodType>
    : F extends { optional: true }
      ? z.ZodOptional<T & z.ZodType>
      : T;
/** The tool's input shape: the route's fields, renamed and adjusted as `F` says, and the tool's own. */
export type ToolShape<O extends Operation, F, E extends z.ZodRawShape> = {
  [K in keyof RouteFields<O> as Renamed<K, F>]: Adjusted<RouteFields<O>[K], K extends keyof F ? F[K] : undefined>;
} & E;

export interface RouteToolSpec<O extends Operation, F extends FieldMap<O>, E extends z.ZodRawShape> {
  route: O;
  title: string;
  /** What the model reads to choose the tool: what it does, what it answers and what comes next. */
  description: string;
  annotations: ToolAnnotations;
  fields?: F;
  /** The tool's own fields, never sent to the route (`specName`; an event window's bounds). */
  extra?: E;
}

export interface RouteTool<O extends Operation = Operation, S extends z.ZodRawShape = z.ZodRawShape> {
  route: O;
  title: string;
  description: string;
  annotations: ToolAnnotations;
  /** The tool's input schema, as the bridge registers it. */
  input: z.ZodObject<S>;
  /** The request the route gets for a parsed input: path parameters, query values and body, by the route's names. */
  request(input: z.output<z.ZodObject<S>>): RouteRequest<O>;
  /** Where each of the route's fields is in the tool's input. */
  fields: ReadonlyArray<{ name: string; in: "path" | "query" | "body"; as: string }>;
}

export type ToolInput<T extends RouteTool> = z.output<T["input"]>;

/** Makes the tool: derives its input from the route (see the top of this file) and how to split it back. */
export function routeTool<O extends Operation, const F extends FieldMap<O>, E extends z.ZodRawShape = NoFields>(
  spec: RouteToolSpec<O, F, E>,
): RouteTool<O, ToolShape<O, F, E>> {
  const { route } = spec;
  const options = (spec.fields ?? {}) as Record<string, FieldOptions | undefined>;
  const body = route.body === undefined ? undefined : bodyObject(route.body.schema);
  if (route.body !== undefined && body === undefined)
    throw new Error(`${route.operationId}: a body that is not an object cannot be a tool's input`);
  const sources = [
    ...paramNames(route.path).map((name) => ({ name, in: "path" as const, schema: pathField(route, name) })),
    ...Object.entries(route.query?.shape ?? {}).map(([name, schema]) => ({
      name,
      in: "query" as const,
      schema: queryValue(schema as z.ZodType),
    })),
    ...Object.entries(body?.shape ?? {}).map(([name, schema]) => ({
      name,
      in: "body" as const,
      schema: schema as z.ZodType,
    })),
  ];
  const fields = sources.map((source) => ({
    name: source.name,
    in: source.in,
    as: options[source.name]?.as ?? source.name,
  }));
  const shape: Record<string, z.core.$ZodType> = {};
  for (const [i, source] of sources.entries())
    shape[fields[i]?.as ?? source.name] = adjust(source.schema, options[source.name]);
  for (const [name, schema] of Object.entries(spec.extra ?? {})) {
    if (name in shape) throw new Error(`${route.operationId}: tool field ${name} is already a field of the route`);
    shape[name] = schema;
  }
  if (Object.keys(shape).length !== sources.length + Object.keys(spec.extra ?? {}).length)
    throw new Error(`${route.operationId}: two fields of the tool have one name`);

  const request = (input: Record<string, unknown>) => {
    const into: Record<"path" | "query" | "body", Record<string, unknown>> = { path: {}, query: {}, body: {} };
    for (const field of fields) if (input[field.as] !== undefined) into[field.in][field.name] = input[field.as];
    return {
      params: fields.some((field) => field.in === "path") ? into.path : undefined,
      query: into.query,
      body: body === undefined ? undefined : into.body,
    };
  };
  let input = z.object(shape);
  // The route's rules across fields, checked on what the route would get, in the tool's words.
  for (const rule of body === undefined ? [] : rulesOf(body))
    input = input.superRefine((value, ctx) => {
      if (!rule.holds(request(value).body as never)) ctx.addIssue({ code: "custom", message: toolMessageOf(rule) });
    });
  return {
    route,
    title: spec.title,
    description: spec.description,
    annotations: spec.annotations,
    input: input as unknown as z.ZodObject<ToolShape<O, F, E>>,
    request: request as unknown as RouteTool<O, ToolShape<O, F, E>>["request"],
    fields,
  };
}

/** A path parameter as a tool field: any non-empty text (the route answers a malformed id as unknown). */
function pathField(route: Operation, name: string): z.ZodType {
  const known = PATH_PARAMS[name as PathParamName] as (typeof PATH_PARAMS)[PathParamName] | undefined;
  if (known === undefined) throw new Error(`${route.operationId}: path parameter ${name} is not in PATH_PARAMS`);
  return z.string().min(1).describe(known.description);
}

function adjust(schema: z.ZodType, options: FieldOptions = {}): z.ZodType {
  let adjusted = schema;
  if (options.withoutNull) adjusted = withoutNull(adjusted);
  if (options.default !== undefined)
    adjusted = (adjusted instanceof z.ZodOptional ? (adjusted.unwrap() as z.ZodType) : adjusted).default(
      options.default as never,
    );
  if (options.optional) adjusted = adjusted.optional();
  const description = options.describe ?? schema.description;
  return description === undefined ? adjusted : adjusted.describe(description);
}

function withoutNull(schema: z.ZodType): z.ZodType {
  if (schema instanceof z.ZodOptional) return withoutNull(schema.unwrap() as z.ZodType).optional();
  if (schema instanceof z.ZodNullable) return schema.unwrap() as z.ZodType;
  return schema;
}
