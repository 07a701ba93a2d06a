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
