/**
 * The JSON text the ledger stores for each event, and a reader of its head that leaves `data` as
 * text. Written by concatenation in one fixed key order, so the head can be read without parsing
 * the whole event: a replay to an SSE client never needs `data` as an object, only as JSON.
 */

/** The stored text of an event; `dataJson` is `JSON.stringify` of an object. Key order is the format. */
export function storedEventJson(
  runId: string,
  seq: number,
  type: string,
  agentId: string | null,
  at: number,
  dataJson: string,
): string {
  return `{"runId":${JSON.stringify(runId)},"seq":${seq},"type":${JSON.stringify(type)},"agentId":${JSON.stringify(agentId)},"at":${at},"data":${dataJson}}`;
}

/** A stored event's fields as the text they were written as; only `seq` and `type` are decoded. */
export interface StoredEventHead {
  seq: number;
  type: string;
  /** `JSON.stringify(agentId)`: `null` or a quoted string. */
  agentIdJson: string;
  /** The `at` number as written, which is also its JSON. */
  atJson: string;
  /** `JSON.stringify(data)` as it was appended: an object's text. */
  dataJson: string;
}

const JSON_STRING = String.raw`"(?:[^"\\]|\\.)*"`;
const HEAD = new RegExp(
  `^\\{"runId":${JSON_STRING},"seq":(\\d+),"type":(${JSON_STRING}),"agentId":(null|${JSON_STRING}),"at":(-?[0-9][0-9.eE+-]*),"data":\\{`,
);

/**
 * The head of a stored event's text, or `undefined` when the text is not in `storedEventJson`'s
 * shape (a ledger written by another version): the caller then parses it whole.
 */
export function storedEventHead(json: string): StoredEventHead | undefined {
  const m = HEAD.exec(json);
  if (m === null || !json.endsWith("}")) return undefined;
  const [head, seq = "", typeJson = "", agentIdJson = "", atJson = ""] = m;
  // A JSON string without escapes is its own content between the quotes.
  const type = typeJson.includes("\\") ? (JSON.parse(typeJson) as string) : typeJson.slice(1, -1);
  return { seq: Number(seq), type, agentIdJson, atJson, dataJson: json.slice(head.length - 1, -1) };
}
