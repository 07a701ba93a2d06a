import { seededRandom } from "../support/seeded-random.ts";
import type { RawRequest } from "./raw-http.ts";

/**
 * Seeded generator of requests that must all be refused with a 4xx: every one is malformed in at
 * least one way that no route may accept, even when it names a real, live agent. Same seed, same
 * requests, so a failure reproduces from its index.
 */

/** Real ids the generator aims at, so bodies reach validation instead of stopping at a 404. */
export interface Targets {
  /** Run A and its live root. */
  runId: string;
  agentId: string;
  /** Run B's live root: a foreign id when used with run A. */
  foreignAgentId: string;
  /** Body size above which the daemon answers 413. */
  bodyLimitBytes: number;
}

export interface Malformed {
  /** What was broken and where, for the failure message. */
  label: string;
  request: RawRequest;
}

type Rng = () => number;
const pick = <T>(rng: Rng, items: readonly T[]): T => items[Math.floor(rng() * items.length)] as T;
const JSON_HEADERS = [["content-type", "application/json"]] as const;
const SPEC = { name: "fuzz", script: [] };

/** Routes that take a JSON body, with a body that would be valid and the fields it has. */
interface BodyRoute {
  method: "POST";
  path: (t: Targets) => string;
  valid: (t: Targets) => Record<string, unknown>;
  /** A field of the body and a wrong value for it. */
  wrongTypes: ReadonlyArray<readonly [string, unknown]>;
  /** Fields whose absence alone makes the body invalid. */
  required: readonly string[];
}

const BODY_ROUTES: readonly BodyRoute[] = [
  {
    method: "POST",
    path: () => "/runs",
    valid: () => ({ spec: SPEC, prompt: "hi", keepAlive: true }),
    wrongTypes: [
      ["spec", "fuzz"],
      ["spec", []],
      ["spec", null],
      ["spec", { name: "bad name!", script: [] }],
      ["spec", { name: "x" }],
      ["spec", { name: "x", script: [], model: { provider: "p", id: "m" } }],
      ["spec", { name: "x".repeat(65), script: [] }],
      ["spec", { name: "x", script: [{ text: 5 }] }],
      ["spec", { name: "x", script: [{ tool: "" }] }],
      ["spec", { name: "x", script: [{ text: "t", delayMs: -1 }] }],
      ["spec", { name: "x", script: [{ text: "t", delayMs: 3_600_001 }] }],
      ["spec", { name: "x", script: [], spawnDepth: 65 }],
      ["spec", { name: "x", script: [], maxAgents: 1e20 }],
      ["spec", { name: "x", script: [], env: { "1BAD": "v" } }],
      ["spec", { name: "x", script: [], env: { A: 1 } }],
      ["spec", { name: "x", script: [], tools: ["rm"] }],
      ["spec", { name: "x", script: [], network: "yes" }],
      ["spec", { name: "x", script: [], gpu: 1 }],
      ["spec", { name: "x", script: [], systemPrompt: "s".repeat(200_001) }],
      ["spec", { name: "x", script: Array.from({ length: 10_001 }, () => ({ text: "" })) }],
      ["prompt", 5],
      ["prompt", ""],
      ["prompt", ["hi"]],
      ["keepAlive", "true"],
      ["keepAlive", 1],
      ["budget", "big"],
      ["budget", { spawnDepth: -1 }],
      ["budget", { maxAgents: 1.5 }],
      ["budget", { maxAgents: 1e300 }],
      ["budget", { spawnDepth: "2" }],
      ["budget", { maxAgents: -(2 ** 53) }], // one past -Number.MAX_SAFE_INTEGER
      ["budget", { tokens: 10 }],
    ],
    required: ["spec"],
  },
  {
    method: "POST",
    path: (t) => `/runs/${t.runId}/agents`,
    valid: (t) => ({ parentAgentId: t.agentId, spec: SPEC, prompt: "hi", idempotencyKey: "k" }),
    wrongTypes: [
      ["parentAgentId", 7],
      ["parentAgentId", ""],
      ["parentAgentId", null],
      ["parentAgentId", ["a_1"]],
      ["spec", "x"],
      ["spec", { name: "", script: [] }],
      ["waitFor", "a_1"],
      ["waitFor", [1]],
      ["waitFor", [""]],
      ["waitFor", {}],
      ["idempotencyKey", ""],
      ["idempotencyKey", "k".repeat(257)],
      ["idempotencyKey", 1],
      ["budget", { spawnDepth: -5 }],
      ["budget", { maxAgents: 2 ** 60 }],
      ["prompt", {}],
      ["keepAlive", null],
    ],
    required: ["parentAgentId", "spec"],
  },
  ...(["prompt", "steer", "pause", "resume", "stop"] as const).map(
    (action): BodyRoute => ({
      method: "POST",
      path: (t) => `/agents/${t.agentId}/${action}`,
      valid: () =>
        ({
          prompt: { text: "hi" },
          steer: { message: "m", scope: "agent" },
          pause: { scope: "agent" },
          resume: { scope: "subtree" },
          stop: { mode: "abort", scope: "agent" },
        })[action],
      wrongTypes: {
        prompt: [
          ["text", ""],
          ["text", 1],
          ["text", null],
          ["text", ["a"]],
        ] as const,
        steer: [
          ["message", ""],
          ["message", false],
          ["scope", "run"],
          ["scope", 1],
        ] as const,
        pause: [
          ["scope", "tree"],
          ["scope", ""],
          ["scope", null],
          ["scope", ["agent"]],
        ] as const,
        resume: [
          ["scope", "all"],
          ["scope", 0],
          ["scope", {}],
        ] as const,
        stop: [
          ["mode", "kill"],
          ["mode", 1],
          ["scope", "everything"],
          ["mode", null],
          ["drainTimeoutMs", 5_000],
          ["drainTimeoutMs", "10m"],
        ] as const,
      }[action],
      required: { prompt: ["text"], steer: ["message"], pause: [], resume: [], stop: [] }[action],
    }),
  ),
  {
    method: "POST",
    path: (t) => `/agents/${t.agentId}/permissions/p_0123456789abcdef01234567`,
    valid: () => ({ decision: "deny", message: "no" }),
    wrongTypes: [
      ["decision", "maybe"],
      ["decision", 1],
      ["decision", null],
      ["decision", ["allow"]],
      ["message", ""],
      ["message", 5],
      ["message", "m".repeat(10_001)],
    ],
    required: ["decision"],
  },
];

/** Ids that are malformed, of the wrong kind, or well formed but not there; all paths refuse them. */
const BAD_IDS = [
  "",
  "a_",
  "r_",
  "a_XYZ",
  "A_1",
  "a_1g",
  "a_-1",
  "a_0x1f",
  "..",
  "%2e%2e",
  "..%2F..%2Fetc",
  "..%2f..%2f..%2fetc%2fpasswd",
  "%252e%252e%252f",
  "a_1%00",
  "%00",
  "a_1%0d%0aX-Injected:%201",
  "a_%E2%80%AE",
  "a_%ef%bc%91",
  "%F0%9F%92%A9",
  "a_1;rm%20-rf",
  "'%20OR%201=1--",
  "$%7Bjndi:x%7D",
  "a_deadbeef",
  "r_deadbeef",
  "a_00000000000000000000000000000000",
  `a_${"f".repeat(99)}`,
  `a_${"f".repeat(500)}`,
  "%C0%AE%C0%AE",
  "%zz",
  "%E0%A4%A",
  "a_1%2F..%2F..%2Frun",
  "a_1/..",
  ".",
];

/** Paths no route answers, or answers only with a refusal. */
const BAD_PATHS = [
  "/runs/r_x/../../",
  "/agents/..%2F..%2Fetc",
  "//runs",
  "/runs//agents",
  "/./runs",
  "/runs/%2e%2e/",
  "/runs/r_1/agents/../events",
  "/runs/r_1/agents/a_1",
  "/run",
  "/agents",
  "/agents/",
  "/runs/",
  "/health/..",
  "/health%00",
  "/runs%00",
  "/RUNS",
  "/agents/a_1/result/x",
  "/agents/a_1/explode",
  "/runs/r_1/events/",
  "*",
  "http://127.0.0.1/runs/r_deadbeef",
  "/runs/r_deadbeef?%zz",
  "/runs/r_deadbeef#frag",
  "/%",
  "/%%%",
  "/\u00e9",
  "/runs/r_1/../../../../etc/passwd",
];

const INVALID_JSON = [
  "{",
  "}",
  '{"a":}',
  "{'a':1}",
  "nul",
  "tru",
  '{"a":1,}',
  "[1,]",
  "{} x",
  '{"a" 1}',
  "\u0000",
  '{"a":"\u0001"',
  "01",
  '{"a":01}',
  "NaN",
  '{"a":Infinity}',
  '{"a":undefined}',
  "/*c*/{}",
  '{"__proto__":{"x":1}}',
  '{"constructor":{"prototype":{"x":1}}}',
  '"unterminated',
  '{"a":"\\x41"}',
  "\ufeff\ufeff{}",
  '{"a":1}{"b":2}',
  "<xml/>",
  "a=1&b=2",
  "[".repeat(300) + "]".repeat(299),
];

const NOT_OBJECTS = ["[]", "[{}]", '"scope"', "42", "-1", "1e400", "null", "true", "false", '""'];

const WRONG_CONTENT_TYPES = [
  "text/plain",
  "application/x-www-form-urlencoded",
  "multipart/form-data; boundary=x",
  "application/xml",
  "text/html",
  "application/octet-stream",
  "application/jsonx",
  "application/json-patch+json",
  "image/png",
  "*/*",
  "json",
  "application/",
  "text/event-stream",
];

const GET_ROUTES = [
  (id: string) => `/runs/${id}`,
  (id: string) => `/runs/${id}/events`,
  (id: string) => `/agents/${id}`,
  (id: string) => `/agents/${id}/result`,
];
const POST_AGENT_ACTIONS = ["prompt", "steer", "pause", "resume", "stop"];

/** The request families; each returns a request that must be refused. */
const FAMILIES: ReadonlyArray<readonly [string, (rng: Rng, t: Targets) => Malformed]> = [
  [
    "bad JSON",
    (rng, t) => {
      const route = pick(rng, BODY_ROUTES);
      const valid = JSON.stringify(route.valid(t));
      // A strict prefix of a JSON object is never a complete JSON value.
      const body = rng() < 0.5 ? pick(rng, INVALID_JSON) : valid.slice(0, Math.floor(rng() * (valid.length - 1)) + 1);
      return {
        label: `bad JSON ${JSON.stringify(body.slice(0, 40))}`,
        request: { method: route.method, path: route.path(t), headers: JSON_HEADERS, body },
      };
    },
  ],
  [
    "not an object",
    (rng, t) => {
      const route = pick(rng, BODY_ROUTES);
      const body = pick(rng, NOT_OBJECTS);
      return {
        label: `JSON ${body} for an object`,
        request: { method: route.method, path: route.path(t), headers: JSON_HEADERS, body },
      };
    },
  ],
  [
    "wrong type",
    (rng, t) => {
      const route = pick(rng, BODY_ROUTES);
      const [field, value] = pick(rng, route.wrongTypes);
      const body = { ...route.valid(t), [field]: value };
      return {
        label: `${field} = ${JSON.stringify(value).slice(0, 60)}`,
        request: { method: route.method, path: route.path(t), headers: JSON_HEADERS, body: JSON.stringify(body) },
      };
    },
  ],
  [
    "unknown field",
    (rng, t) => {
      const route = pick(rng, BODY_ROUTES);
      const name = pick(rng, [
        "extra",
        "force",
        "runId",
        "agentId",
        "Scope",
        "text ",
        "",
        "toString",
        "hasOwnProperty",
        "__defineGetter__",
        "\u0000",
        "spec.name",
      ]);
      const body = { ...route.valid(t), [name]: pick(rng, [1, "x", null, {}, []]) };
      return {
        label: `unknown field ${JSON.stringify(name)}`,
        request: { method: route.method, path: route.path(t), headers: JSON_HEADERS, body: JSON.stringify(body) },
      };
    },
  ],
  [
    "missing field",
    (rng, t) => {
      const routes = BODY_ROUTES.filter((r) => r.required.length > 0);
      const route = pick(rng, routes);
      const field = pick(rng, route.required);
      const { [field]: _dropped, ...body } = route.valid(t);
      return {
        label: `missing ${field}`,
        request: { method: route.method, path: route.path(t), headers: JSON_HEADERS, body: JSON.stringify(body) },
      };
    },
  ],
  [
    "huge string",
    (rng, t) => {
      // Big but under the body limit, and still invalid: the size must not make it slip through.
      const route = pick(rng, BODY_ROUTES);
      const size = Math.floor(t.bodyLimitBytes * (0.3 + rng() * 0.6));
      const body = { ...route.valid(t), [pick(rng, ["huge", "notes"])]: "\u00e9x".repeat(Math.floor(size / 4)) };
      return {
        label: `huge unknown string field (${size} B)`,
        request: { method: route.method, path: route.path(t), headers: JSON_HEADERS, body: JSON.stringify(body) },
      };
    },
  ],
  [
    "huge body",
    (rng, t) => {
      const route = pick(rng, BODY_ROUTES);
      const size = t.bodyLimitBytes + 1 + Math.floor(rng() * t.bodyLimitBytes);
      const valid = JSON.stringify(route.valid(t));
      const body = `${valid.slice(0, -1)},"pad":"${"p".repeat(size)}"}`;
      const framing = rng() < 0.5 ? "chunked" : "length";
      return {
        label: `${framing} body of ${body.length} B`,
        request: { method: route.method, path: route.path(t), headers: JSON_HEADERS, body, framing },
      };
    },
  ],
  [
    "deep nesting",
    (rng, t) => {
      // Valid JSON, deeper than anything the service should follow; in an opaque field of the spec.
      const depth = pick(rng, [5_000, 20_000, 100_000]);
      const route = BODY_ROUTES[rng() < 0.5 ? 0 : 1] as BodyRoute;
      const valid = JSON.stringify(route.valid(t));
      const nested = "[".repeat(depth) + "]".repeat(depth);
      const spec = `{"name":"deep","script":[{"tool":"bash","args":{"x":${nested}}}]}`;
      const body = valid.replace(JSON.stringify(SPEC), spec);
      return {
        label: `args nested ${depth} deep`,
        request: { method: "POST", path: route.path(t), headers: JSON_HEADERS, body },
      };
    },
  ],
  [
    "wrong content type",
    (rng, t) => {
      const route = pick(rng, BODY_ROUTES);
      const type = pick(rng, [...WRONG_CONTENT_TYPES, null]);
      const headers = type === null ? [] : [["content-type", type] as const];
      return {
        label: `content-type ${type ?? "(none)"}`,
        request: { method: route.method, path: route.path(t), headers, body: JSON.stringify(route.valid(t)) },
      };
    },
  ],
  [
    "bad id",
    (rng, t) => {
      const id = pick(rng, BAD_IDS);
      if (rng() < 0.5) {
        const path = pick(rng, GET_ROUTES)(id);
        return { label: `GET bad id ${id.slice(0, 40)}`, request: { method: "GET", path } };
      }
      const action = pick(rng, POST_AGENT_ACTIONS);
      const path = pick(rng, [`/agents/${id}/${action}`, `/runs/${id}/agents`]);
      // A body that would be accepted: the id alone is at fault.
      const valid = path.startsWith("/runs/")
        ? { parentAgentId: t.agentId, spec: SPEC }
        : (({ prompt: { text: "hi" }, steer: { message: "m" } } as Record<string, object>)[action] ?? {});
      return {
        label: `POST bad id ${id.slice(0, 40)}`,
        request: { method: "POST", path, headers: JSON_HEADERS, body: JSON.stringify(valid) },
      };
    },
  ],
  [
    "delete bad run",
    (rng) => {
      const id = pick(
        rng,
        BAD_IDS.filter((i) => i !== ""),
      );
      return { label: `DELETE /runs/${id.slice(0, 40)}`, request: { method: "DELETE", path: `/runs/${id}` } };
    },
  ],
  [
    "foreign id",
    (rng, t) => {
      // Well-formed requests whose only fault is naming run B's agent from run A.
      if (rng() < 0.5) {
        return {
          label: "spawn under run B's agent",
          request: {
            method: "POST",
            path: `/runs/${t.runId}/agents`,
            headers: JSON_HEADERS,
            body: JSON.stringify({ parentAgentId: t.foreignAgentId, spec: SPEC }),
          },
        };
      }
      const body = { parentAgentId: t.agentId, spec: SPEC, waitFor: [t.foreignAgentId] };
      return {
        label: "waitFor naming run B's agent",
        request: { method: "POST", path: `/runs/${t.runId}/agents`, headers: JSON_HEADERS, body: JSON.stringify(body) },
      };
    },
  ],
  [
    "path trick",
    (rng) => {
      const path = pick(rng, BAD_PATHS);
      return { label: `path ${path}`, request: { method: pick(rng, ["GET", "POST", "DELETE"]), path } };
    },
  ],
  [
    "very long path",
    (rng, t) => {
      const length = pick(rng, [2_000, 9_000, 17_000, 70_000]);
      const path = pick(rng, [
        `/agents/${t.agentId}/${"x".repeat(length)}`,
        `/runs/r_${"a".repeat(length)}`,
        `/${"../".repeat(length / 3)}`,
        `/agents/a_1/result?wait=${"9".repeat(length)}`,
      ]);
      return { label: `path of ${path.length} chars`, request: { method: "GET", path } };
    },
  ],
  [
    "wrong method",
    (rng, t) => {
      const path = pick(rng, [
        `/runs`,
        `/runs/${t.runId}`,
        `/runs/${t.runId}/events`,
        `/runs/${t.runId}/agents`,
        `/agents/${t.agentId}`,
        `/agents/${t.agentId}/result`,
        "/health",
        ...POST_AGENT_ACTIONS.map((a) => `/agents/${t.agentId}/${a}`),
      ]);
      const allowed: Record<string, string[]> = { "/runs": ["POST", "GET"], "/health": ["GET"] };
      const method = pick(
        rng,
        ["GET", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE", "POST"].filter((m) => {
          if (allowed[path]) return !allowed[path].includes(m);
          if (path.endsWith("/events") || path.endsWith("/result") || path === `/agents/${t.agentId}`)
            return m !== "GET";
          if (path === `/runs/${t.runId}`) return m !== "GET" && m !== "DELETE";
          return m !== "POST";
        }),
      );
      return { label: `${method} ${path}`, request: { method, path } };
    },
  ],
  [
    "invalid method",
    (rng) => {
      const method = pick(rng, ["G@T", "FOO", "get ", "P0ST", "GETT", "\u00c9T"]);
      return { label: `method ${method}`, request: { method, path: "/health" } };
    },
  ],
  [
    "bad query",
    (rng, t) => {
      const wait = pick(rng, [
        "-1",
        "241",
        "1.5",
        "1e2",
        "abc",
        "",
        "%00",
        "0x10",
        "99999999999999999999",
        "1&wait=2",
        "%20",
        "+1",
        "1%20",
        "Infinity",
        "NaN",
      ]);
      return {
        label: `result?wait=${wait}`,
        request: { method: "GET", path: `/agents/${t.agentId}/result?wait=${wait}` },
      };
    },
  ],
  [
    "bogus Last-Event-ID",
    (rng, t) => {
      const value = pick(rng, [
        "-1",
        "1.5",
        "abc",
        "1e3",
        "0x10",
        "9999999999999999",
        "1 2",
        "١",
        "+1",
        "NaN",
        "Infinity",
        "%31",
      ]);
      if (rng() < 0.3)
        return {
          label: `events?lastEventId=${value}`,
          request: { method: "GET", path: `/runs/${t.runId}/events?lastEventId=${encodeURIComponent(value)}` },
        };
      if (rng() < 0.3)
        return {
          label: "events?lastEventId twice",
          request: { method: "GET", path: `/runs/${t.runId}/events?lastEventId=1&lastEventId=2` },
        };
      const headers =
        rng() < 0.2
          ? ([
              ["last-event-id", "1"],
              ["last-event-id", "2"],
            ] as const)
          : ([["last-event-id", value]] as const);
      return {
        label: `Last-Event-ID ${headers.map((h) => h[1]).join(",")}`,
        request: { method: "GET", path: `/runs/${t.runId}/events`, headers },
      };
    },
  ],
  [
    "bad headers",
    (rng, t) => {
      const choice = pick(rng, [
        "huge header",
        "bad length",
        "two lengths",
        "length and chunked",
        "bad chunk",
      ] as const);
      const path = `/agents/${t.agentId}/pause`;
      if (choice === "huge header")
        return {
          label: choice,
          request: {
            method: "GET",
            path: `/agents/${t.agentId}`,
            headers: [["x-fill", "h".repeat(20_000 + Math.floor(rng() * 50_000))]],
          },
        };
      if (choice === "bad length")
        return {
          label: choice,
          request: {
            method: "POST",
            path,
            headers: [...JSON_HEADERS, ["content-length", pick(rng, ["abc", "-1", "1.5", "0x10"])]],
          },
        };
      if (choice === "two lengths")
        return {
          label: choice,
          request: {
            method: "POST",
            path,
            headers: [...JSON_HEADERS, ["content-length", "2"], ["content-length", "3"]],
          },
        };
      if (choice === "length and chunked")
        return {
          label: choice,
          request: {
            method: "POST",
            path,
            headers: [...JSON_HEADERS, ["content-length", "2"], ["transfer-encoding", "chunked"]],
          },
        };
      return {
        label: choice,
        request: {
          method: "POST",
          path,
          headers: [...JSON_HEADERS, ["transfer-encoding", "chunked"]],
          body: "zz\r\n{}\r\n0\r\n\r\n",
          framing: "as-is",
        },
      };
    },
  ],
];

/** `count` requests, spread over every family, in a seeded order. */
export function malformedRequests(seed: number, count: number, targets: Targets): Malformed[] {
  const rng = seededRandom(seed);
  return Array.from({ length: count }, (_, i) => {
    // Round-robin over families keeps every one represented; the rest of each request is random.
    const [family, make] = FAMILIES[i % FAMILIES.length] as (typeof FAMILIES)[number];
    const made = make(rng, targets);
    return { label: `${family}: ${made.label}`, request: made.request };
  });
}

export const FAMILY_COUNT = FAMILIES.length;
