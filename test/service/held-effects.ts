import assert from "node:assert/strict";
import { after, describe, it } from "node:test";
import { isSwarmError } from "../../src/errors.ts";
import { echoSpec, type MemoryService, startMemoryService } from "../support/memory-service.ts";

/** A promise and the functions that settle it, for effects a test holds open. */
function gate() {
  let open!: () => void;
  let fail!: (err: Error) => void;
  const promise = new Promise<void>((resolve, reject) => {
    open = resolve;
    fail = reject;
  });
  return { promise, open, fail };
}

describe("service: effects that hang or arrive late", () => {
  const services: MemoryService[] = [];
  after(() => Promise.all(services.map((s) => s.stop())));

  /** A service whose fresh sandboxes (a run's root) exist only once `until` settles. */
  const withHeldProvision = async (until: Promise<void>) => {
    const s = await startMemoryService({
      wrap: (rt) => ({
        ...rt,
        provision: async (req, signal) => {
          await until;
          return rt.provision(req, signal);
        },
      }),
    });
    services.push(s);
    return s;
  };

  it("answers a pause whose freeze never finishes within the member timeout, and the next control still runs", async () => {
    const s = await startMemoryService({
      memberTimeoutMs: 300,
      wrap: (rt) => ({ ...rt, freeze: () => new Promise<never>(() => undefined) }),
    });
    services.push(s);
    const { rootAgentId } = await s.service.createRun({ spec: echoSpec("root"), keepAlive: true });
    await s.agentWhen(rootAgentId, (a) => a.state === "running", "runs");
    await assert.rejects(
      s.service.pause(rootAgentId, "agent"),
      (err) => isSwarmError(err, "SANDBOX_FREEZE_FAILED") && /no answer from agent .* within 300 ms/.test(err.message),
    );
    const stopped = await s.service.stop(rootAgentId, { mode: "abort", scope: "agent" });
    assert.deepEqual(
      stopped.results,
      [{ agentId: rootAgentId, outcome: "applied" }],
      "a stop after the hung pauses is carried out",
    );
  });

  it("forks a child spawned while its parent provisions once the parent's sandbox exists", async () => {
    const parentReady = gate();
    const s = await withHeldProvision(parentReady.promise);
    const { runId, rootAgentId } = await s.service.createRun({ spec: echoSpec("root"), keepAlive: true });
    const child = await s.service.spawn(runId, {
      parentAgentId: rootAgentId,
      spec: echoSpec("child"),
      prompt: "hello",
    });
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.equal(
      (await s.service.getAgent(child.agentId)).state,
      "provisioning",
      "the child waits for its parent's sandbox",
    );
    parentReady.open();
    assert.equal((await s.service.result(child.agentId, 5)).result, "hello");
  });

  it("fails a child whose parent ends before its sandbox exists, naming why", async () => {
    const parentReady = gate();
    const s = await withHeldProvision(parentReady.promise);
    const { runId, rootAgentId } = await s.service.createRun({ spec: echoSpec("root"), keepAlive: true });
    const child = await s.service.spawn(runId, { parentAgentId: rootAgentId, spec: echoSpec("child") });
    parentReady.fail(new Error("no room for the parent"));
    const ended = await s.eventWhen(
      runId,
      (e) => e.type === "agent_ended" && e.agentId === child.agentId,
      "the child's end",
    );
    assert.equal(ended.data.outcome, "failed");
    assert.match(String(ended.data.error), /parent .* ended before the fork/);
  });
});
