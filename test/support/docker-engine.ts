import assert from "node:assert/strict";
import { test } from "node:test";
import Docker from "dockerode";
import { errorMessage } from "../../src/errors.ts";
import { pingEngine } from "../../src/sandbox/docker/engine.ts";
import { defaultSandboxImage } from "../../src/sandbox/docker/sandbox-image.ts";

/** Why docker-backed tests cannot run here (no engine, no sandbox image), or undefined when they can. */
export async function dockerUnusable(): Promise<string | undefined> {
  try {
    await pingEngine();
  } catch (err) {
    return errorMessage(err);
  }
  const image = defaultSandboxImage();
  const images = await new Docker().listImages({ filters: { reference: [image] } });
  return images.length === 0 ? `image ${image} is missing: run \`make sandbox-image\`` : undefined;
}

/**
 * Declare docker-backed suites when an engine and the image are here; otherwise one test that
 * fails under CI=true (CI must run them) or is skipped, saying why.
 */
export async function whenDocker(name: string, declare: () => void | Promise<void>): Promise<void> {
  const reason = await dockerUnusable();
  if (reason === undefined) await declare();
  else dockerMissing(name, reason);
}

/** The one test that stands for a docker-backed suite that cannot run for `reason`: failing under CI=true, else skipped. */
export function dockerMissing(name: string, reason: string): void {
  if (process.env.CI === "true")
    test(`${name}: a Docker engine and the sandbox image are required when CI=true`, () => assert.fail(reason));
  else test(name, { skip: `docker tests skipped: ${reason}` }, () => undefined);
}
