import { useState } from "preact/hooks";
import type { AdoptResponse, ChangesView, FileChange } from "../swarm-api.ts";
import type { AgentRecord } from "../views/run-view.ts";
import { ApiError, api } from "./api.ts";
import { DiffView } from "./diff-view.tsx";
import { forkPointText } from "./format.ts";
import { runHref } from "./route.ts";
import { usePolled } from "./use-polled.ts";

interface ForkProps {
  record: AgentRecord;
  parent: AgentRecord | undefined;
  /** Why Adopt cannot be pressed now; null when it can. */
  blocked: string | null;
}

/**
 * A fork child's part of its panel: `Changes` opens what it changed in /work since its fork point
 * (each path, and each text file's diff) with `Adopt`, which applies them to its parent's /work
 * (`POST /agents/:parent/adopt`); when both changed a file the daemon says which, and the page
 * offers `Adopt, theirs win`. Nothing for an agent that is no fork child.
 */
export function ForkChanges({ record, parent, blocked }: ForkProps) {
  const [open, setOpen] = useState(false);
  const from = record.forkedFrom;
  if (!from) return null;
  return (
    <section class="fork-changes" aria-label="Fork">
      <h3>Changes since the fork</h3>
      <p>
        <button type="button" aria-expanded={open} onClick={() => setOpen(!open)}>
          Changes
        </button>{" "}
        <span class="muted">
          what it changed in /work since it was forked from {parent?.specName ?? from.agentId}{" "}
          {forkPointText(from.forkPoint)}
        </span>
      </p>
      {open && <ChangesList record={record} parent={parent} blocked={blocked} />}
    </section>
  );
}

/** Read again when the child's state or settled turns change: a live child's /work moves with its turns. */
function ChangesList({ record, parent, blocked }: ForkProps) {
  const { agentId } = record;
  const changes = usePolled(
    (signal) => api<ChangesView>("GET", `/agents/${agentId}/changes`, undefined, signal),
    `${agentId}:${record.state}:${record.settledTurns}`,
    null,
  );
  if (changes.error && !changes.data)
    return (
      <p class="error" role="alert">
        Changes: {changes.error}
      </p>
    );
  if (!changes.data) return <p class="muted">Reading its changes…</p>;
  const { files, diffBytes } = changes.data;
  return (
    <div class="changes" data-testid="changes">
      {changes.error && <p class="error">{changes.error}</p>}
      <p data-testid="changes-summary">
        {files.length === 0
          ? "No change since the fork."
          : `${files.length} ${files.length === 1 ? "change" : "changes"} since the fork · ${diffBytes} bytes of diff`}
      </p>
      {parent && <AdoptControls child={agentId} parent={parent} blocked={blocked} />}
      {files.length > 0 && (
        <table class="small-table changes-table">
          <thead>
            <tr>
              <th>Change</th>
              <th>Kind</th>
              <th>Path</th>
              <th class="num">Size</th>
            </tr>
          </thead>
          <tbody>
            {files.map((file) => (
              <tr key={file.path} data-path={file.path} data-change={file.change}>
                <td class={`change-${file.change}`}>{file.change}</td>
                <td>{file.kind}</td>
                <td class="mono">
                  {file.path}
                  {file.linkTarget !== undefined && <span class="muted"> → {file.linkTarget}</span>}
                </td>
                <td class="num">{sizes(file)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {files
        .filter((file) => file.diff !== undefined || file.noDiff !== undefined)
        .map((file) => (
          <div class="file-diff" key={file.path} data-diff-path={file.path}>
            <div class="mono file-diff-head">
              {file.change} {file.path}
            </div>
            {file.diff !== undefined ? (
              <DiffView diff={file.diff} />
            ) : (
              <p class="muted" data-testid="no-diff">
                no diff: {file.noDiff}
              </p>
            )}
          </div>
        ))}
    </div>
  );
}

/** "12 → 20 bytes", "20 bytes" (added), "12 bytes → deleted"; nothing for a folder. */
function sizes(file: FileChange): string {
  if (file.kind === "dir") return "";
  if (file.baseSize === null) return file.size === null ? "" : `${file.size} bytes`;
  if (file.size === null) return `${file.baseSize} bytes → deleted`;
  return `${file.baseSize} → ${file.size} bytes`;
}

type AdoptState =
  | { kind: "idle" }
  | { kind: "done"; answer: AdoptResponse }
  | { kind: "refused"; error: string; conflict: boolean };

/** `Adopt`, and on a conflict `Adopt, theirs win`; what was applied and skipped, or the API's refusal. */
function AdoptControls({ child, parent, blocked }: { child: string; parent: AgentRecord; blocked: string | null }) {
  const [busy, setBusy] = useState(false);
  const [shown, setShown] = useState<AdoptState>({ kind: "idle" });
  const adopt = async (onConflict: "fail" | "theirs") => {
    setBusy(true);
    try {
      const answer = await api<AdoptResponse>("POST", `/agents/${parent.agentId}/adopt`, { from: child, onConflict });
      setShown({ kind: "done", answer });
    } catch (err) {
      const error = err instanceof Error ? err.message : String(err);
      // The API says ADOPT_CONFLICT only in its words (its body carries no code): both changed a file.
      const conflict = err instanceof ApiError && err.status === 409 && /changed both by|onConflict/.test(error);
      setShown({ kind: "refused", error, conflict });
    } finally {
      setBusy(false);
    }
  };
  return (
    <div class="adopt">
      <div class="control-buttons">
        <button
          type="button"
          disabled={busy || blocked !== null}
          onClick={() => adopt("fail")}
          title={blocked ?? `Apply these changes to ${parent.specName}'s /work`}
        >
          Adopt
        </button>
        {shown.kind === "refused" && shown.conflict && (
          <button
            type="button"
            class="danger"
            disabled={busy || blocked !== null}
            onClick={() => adopt("theirs")}
            title={`Apply these changes to ${parent.specName}'s /work; where both changed a file, this child's version wins`}
          >
            Adopt, theirs win
          </button>
        )}
        <span class="muted">
          into <a href={runHref(parent.runId, parent.agentId)}>{parent.specName}</a>
          {blocked && ` (${blocked})`}
        </span>
      </div>
      {shown.kind === "refused" && (
        <p class="error" role="alert">
          Adopt: {shown.error}
        </p>
      )}
      {shown.kind === "done" && <Adopted answer={shown.answer} parent={parent.specName} />}
    </div>
  );
}

function Adopted({ answer, parent }: { answer: AdoptResponse; parent: string }) {
  return (
    <div class="results" role="status" aria-label="Adopt results">
      {answer.files.length === 0
        ? `Adopt: nothing to apply to ${parent} (it has these changes already).`
        : `Adopt: applied to ${parent}:`}
      {answer.files.length > 0 && (
        <ul>
          {answer.files.map((file) => (
            <li key={file.path} class="result-applied">
              {file.change} <span class="mono">{file.path}</span>
            </li>
          ))}
        </ul>
      )}
      {answer.skipped.length > 0 && (
        <>
          Skipped:
          <ul>
            {answer.skipped.map((file) => (
              <li key={file.path} class="result-failed">
                <span class="mono">{file.path}</span>: {file.reason}
              </li>
            ))}
          </ul>
        </>
      )}
    </div>
  );
}
