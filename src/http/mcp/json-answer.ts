import { createParser } from "eventsource-parser";
import { SwarmError } from "../../errors.ts";

/**
 * The transport's answer to a request as one JSON body, for a client that did not ask for a stream
 * (curl, a JSON-only client): the stream is read to its end, which comes right after the last
 * response, and the responses among its messages are the body (one, or a batch's in order); its
 * notifications (progress) are dropped. Any answer but a 200 stream is returned as it is.
 */
export async function asJson(answer: Response): Promise<Response> {
  if (answer.status !== 200 || answer.body === null || !answer.headers.get("content-type")?.includes("event-stream"))
    return answer;
  const responses: unknown[] = [];
  const parser = createParser({
    onEvent(event) {
      const message = parsed(event.data);
      if (typeof message === "object" && message !== null && ("result" in message || "error" in message))
        responses.push(message);
    },
  });
  const decoder = new TextDecoder();
  for await (const chunk of answer.body) parser.feed(decoder.decode(chunk, { stream: true }));
  if (responses.length === 0)
    throw new SwarmError(
      "MCP_SESSION_NOT_FOUND",
      "The MCP session closed before the request was answered: initialize a new session.",
    );
  const headers = new Headers({ "content-type": "application/json; charset=utf-8" });
  const session = answer.headers.get("mcp-session-id");
  if (session !== null) headers.set("mcp-session-id", session);
  return new Response(JSON.stringify(responses.length === 1 ? responses[0] : responses), { status: 200, headers });
}

function parsed(data: string): unknown {
  try {
    return JSON.parse(data);
  } catch {
    return undefined;
  }
}
