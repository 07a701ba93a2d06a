import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type Docker from "dockerode";
import { pauseContainer } from "../../src/sandbox/docker/pause.ts";

/** A container whose pause fails with each of `errors` in turn, then succeeds; counts the attempts. */
function flakyContainer(errors: string[]) {
  let attempts = 0;
  const container = {
    pause: async () => {
      const error = errors[attempts++];
      if (error !== undefined) throw new Error(error);
    },
  } as unknown as Docker.Container;
  return { container, attempts: () => attempts };
}

const FREEZER =
  "(HTTP code 500) server error - Cannot pause container c: OCI runtime pause failed: unable to freeze: unknown";

describe("docker pause", () => {
  it("tries again when the cgroup freezer gave up, and succeeds once it goes through", async () => {
    const c = flakyContainer([FREEZER, FREEZER]);
    await pauseContainer(c.container);
    assert.equal(c.attempts(), 3);
  });

  it("gives up after five attempts with the freezer's error", async () => {
    const c = flakyContainer(Array(5).fill(FREEZER));
    await assert.rejects(pauseContainer(c.container), /unable to freeze/);
    assert.equal(c.attempts(), 5);
  });

  it("does not try again after any other error", async () => {
    const c = flakyContainer(["(HTTP code 404) no such container"]);
    await assert.rejects(pauseContainer(c.container), /no such container/);
    assert.equal(c.attempts(), 1);
  });
});
