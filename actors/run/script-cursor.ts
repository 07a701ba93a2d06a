import type { ScriptCursor } from "../../src/gateway/model-caller.ts";
import { scriptKey } from "../../src/ledger/ledger-keys.ts";

/** Where a cursor keeps its place: the run's ledger index, read directly and written in order with the run's events. */
export interface CursorStore {
  getIndex(key: string): Promise<string | undefined>;
  put(key: string, value: string): Promise<unknown>;
}

interface CursorState {
  next: number;
  /** The step handed out and not yet delivered in full, with the hash of the request it answered. */
  pending: { index: number; hash: string } | null;
}

/** A scripted agent's place in its script, in the run's ledger index (`script!<agentId>`). */
export class LedgerScriptCursor implements ScriptCursor {
  #state: Promise<CursorState> | undefined;
  #tail: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly store: CursorStore,
    private readonly agentId: string,
  ) {}

  take(requestHash: string): Promise<number> {
    return this.#serial(async () => {
      const state = await this.#load();
      // The same request again after its answer was cut off (a daemon restart): the same step.
      if (state.pending?.hash === requestHash) return state.pending.index;
      const index = state.next;
      await this.#save({ next: index + 1, pending: { index, hash: requestHash } });
      return index;
    });
  }

  delivered(index: number): Promise<void> {
    return this.#serial(async () => {
      const state = await this.#load();
      if (state.pending?.index === index) await this.#save({ next: state.next, pending: null });
    });
  }

  #serial<T>(work: () => Promise<T>): Promise<T> {
    const result = this.#tail.then(work);
    this.#tail = result.catch(() => undefined);
    return result;
  }

  #load(): Promise<CursorState> {
    this.#state ??= this.store.getIndex(scriptKey(this.agentId)).then((raw) => parseState(raw));
    return this.#state;
  }

  async #save(state: CursorState): Promise<void> {
    this.#state = Promise.resolve(state);
    await this.store.put(scriptKey(this.agentId), JSON.stringify(state));
  }
}

function parseState(raw: string | undefined): CursorState {
  try {
    const value = JSON.parse(raw ?? "") as Partial<CursorState>;
    if (Number.isSafeInteger(value.next) && (value.next ?? -1) >= 0)
      return { next: value.next!, pending: value.pending ?? null };
  } catch {
    // absent or unreadable: the script starts at its first step
  }
  return { next: 0, pending: null };
}
