import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync } from "node:fs";
import { join } from "node:path";
import type { ToolResultMessage } from "@mariozechner/pi-ai";
import { type SessionEntry, SessionManager } from "@mariozechner/pi-coding-agent";

/**
 * A fork child's conversation: the forked agent's pi session copied as a branch (the path from its
 * first entry to its leaf, entry by entry, never replayed through a model), cut at the
 * `spawn_agent` call it was forked from when the fork was made from inside a turn. The daemon puts
 * the forked agent's session file and a note (`ForkNote`) into the child's control folder
 * (`fork/`); the child's harness makes its session from them before its agent first loads one.
 */

/** The fork files in a child's control folder. */
export const FORK_FILES = { dir: "fork", note: "fork.json", session: "session.jsonl" } as const;

/** Which copy a fork child is, and where its conversation was cut. */
export interface ForkNote {
  copy: number;
  of: number;
  /** The `spawn_agent` call of a fork from inside a turn; its result in this copy is `forkedText`. */
  toolCallId?: string;
}

/** What a copy made from inside a turn reads as its `spawn_agent` call's result. */
export const forkedText = (note: Pick<ForkNote, "copy" | "of">) => `forked: you are copy ${note.copy} of ${note.of}`;

/** What the other calls of that same answer read: they ran in the forked agent, not in this copy. */
const notRunText = (toolCallId: string) =>
  `not run in this copy: it was forked at tool call ${toolCallId}, before this call finished`;

/**
 * Append the branch `path` (root first) to `into`, entry by entry through pi's own API (new ids,
 * the same order and content; a compaction keeps the entry it names), cut at `note.toolCallId`
 * and closed with that answer's tool results when given.
 */
export function copyForkBranch(path: readonly SessionEntry[], into: SessionManager, note: ForkNote): void {
  const at = note.toolCallId === undefined ? -1 : callIndex(path, note.toolCallId);
  const branch = at === -1 ? path : path.slice(0, at + 1);
  const ids = new Map<string, string>();
  for (const entry of branch) {
    const id = appendEntry(entry, into, ids);
    if (id !== undefined) ids.set(entry.id, id);
  }
  if (at === -1 || note.toolCallId === undefined) return;
  const answer = path[at] as Extract<SessionEntry, { type: "message" }>;
  if (answer.message.role !== "assistant") return;
  // Calls of the same answer that had finished before the fork (run one after another) keep their results.
  const finished = new Map<string, ToolResultMessage>();
  for (const entry of path.slice(at + 1))
    if (entry.type === "message" && entry.message.role === "toolResult")
      finished.set(entry.message.toolCallId, entry.message);
  for (const block of answer.message.content) {
    if (block.type !== "toolCall") continue;
    const own = block.id === note.toolCallId;
    const result: ToolResultMessage = (!own && finished.get(block.id)) || {
      role: "toolResult",
      toolCallId: block.id,
      toolName: block.name,
      content: [{ type: "text", text: own ? forkedText(note) : notRunText(note.toolCallId) }],
      isError: !own,
      timestamp: Date.now(),
    };
    into.appendMessage(result);
  }
}

/** Where in `path` the assistant answer that made the call `toolCallId` is; -1 when none did. */
function callIndex(path: readonly SessionEntry[], toolCallId: string): number {
  return path.findLastIndex(
    (entry) =>
      entry.type === "message" &&
      entry.message.role === "assistant" &&
      entry.message.content.some((block) => block.type === "toolCall" && block.id === toolCallId),
  );
}

function appendEntry(entry: SessionEntry, into: SessionManager, ids: Map<string, string>): string | undefined {
  switch (entry.type) {
    case "message":
      return into.appendMessage(entry.message as Parameters<SessionManager["appendMessage"]>[0]);
    case "thinking_level_change":
      return into.appendThinkingLevelChange(entry.thinkingLevel);
    case "model_change":
      return into.appendModelChange(entry.provider, entry.modelId);
    case "compaction":
      return into.appendCompaction(
        entry.summary,
        ids.get(entry.firstKeptEntryId) ?? entry.firstKeptEntryId,
        entry.tokensBefore,
        entry.details,
        entry.fromHook,
      );
    case "branch_summary":
      return into.branchWithSummary(into.getLeafId(), entry.summary, entry.details, entry.fromHook);
    case "custom":
      return into.appendCustomEntry(entry.customType, entry.data);
    case "custom_message":
      return into.appendCustomMessageEntry(entry.customType, entry.content, entry.display, entry.details);
    case "session_info":
      return entry.name === undefined ? undefined : into.appendSessionInfo(entry.name);
    default:
      // Labels mark entries for a reader's navigation; they are not part of the conversation.
      return undefined;
  }
}

/**
 * A fork child's harness, before its agent loads its session: when the daemon left fork files and
 * no session exists yet, make the child's session in `sessionDir` from them. Idempotent and safe
 * to interrupt: the session is made in `fork/` and renamed into place whole, and the fork files
 * go only after that (a harness killed in between finds the session and only removes them).
 */
export function prepareForkedSession(controlDir: string, sessionDir: string, cwd: string): void {
  const forkDir = join(controlDir, FORK_FILES.dir);
  const notePath = join(forkDir, FORK_FILES.note);
  if (!existsSync(notePath)) return;
  if (!hasSession(sessionDir)) {
    const note = JSON.parse(readFileSync(notePath, "utf8")) as ForkNote;
    const sourcePath = join(forkDir, FORK_FILES.session);
    const building = join(forkDir, "building");
    rmSync(building, { recursive: true, force: true });
    if (existsSync(sourcePath)) {
      const source = SessionManager.open(sourcePath, building, cwd);
      const made = SessionManager.create(cwd, building);
      copyForkBranch(source.getBranch(), made, note);
      const file = made.getSessionFile();
      // pi writes a session file once it holds an assistant message: an empty conversation leaves none.
      if (file && existsSync(file)) {
        mkdirSync(sessionDir, { recursive: true });
        renameSync(file, join(sessionDir, `fork-${note.copy}-of-${note.of}.jsonl`));
      }
    }
  }
  rmSync(forkDir, { recursive: true, force: true });
}

function hasSession(sessionDir: string): boolean {
  try {
    return readdirSync(sessionDir).some((name) => name.endsWith(".jsonl"));
  } catch {
    return false;
  }
}
