import type Docker from "dockerode";
import { errorMessage } from "../../errors.ts";
import { engineStatus } from "../docker/engine.ts";

const PROGRESS_EVERY_MS = 5_000;

/**
 * Put `image` on a node's engine when it lacks it: `docker save` from the daemon's own engine,
 * `docker load` into the node's (swarmd never pulls, and nodes reach no registry), with progress
 * in the log. Resolves `undefined` when the node has the image, else the reason it cannot.
 */
export async function ensureImageOn(
  image: string,
  local: Docker,
  node: { docker: Docker; name: string },
  log: (message: string) => void,
): Promise<string | undefined> {
  try {
    await node.docker.getImage(image).inspect();
    return undefined;
  } catch (err) {
    if (engineStatus(err) !== 404) return `its engine did not answer about the image: ${errorMessage(err)}`;
  }
  let source: NodeJS.ReadableStream;
  try {
    source = (await local.getImage(image).get()) as NodeJS.ReadableStream;
  } catch (err) {
    return `the daemon's engine has no ${image} to load into it (run \`make sandbox-image\`): ${errorMessage(err)}`;
  }
  log(`loading ${image} into node ${node.name}`);
  let bytes = 0;
  source.on("data", (chunk: Buffer) => {
    bytes += chunk.length;
  });
  const progress = setInterval(
    () => log(`loading ${image} into node ${node.name}: ${(bytes / 1024 / 1024).toFixed(0)} MiB sent`),
    PROGRESS_EVERY_MS,
  );
  try {
    const answer = (await node.docker.loadImage(
      source as NodeJS.ReadableStream & { pipe: never },
    )) as NodeJS.ReadableStream;
    await new Promise<void>((resolve, reject) => {
      answer.on("error", reject);
      answer.on("end", resolve);
      answer.on("close", resolve);
      answer.resume();
    });
    await node.docker.getImage(image).inspect();
    log(`loaded ${image} into node ${node.name} (${(bytes / 1024 / 1024).toFixed(0)} MiB)`);
    return undefined;
  } catch (err) {
    return `${image} could not be loaded into it: ${errorMessage(err)}`;
  } finally {
    clearInterval(progress);
  }
}
