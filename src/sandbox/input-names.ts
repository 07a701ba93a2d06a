import { SwarmError } from "../errors.ts";

/** Throw `INVALID_INPUT_NAME` unless every name is one plain file name (see `SandboxRuntime.writeInputs`). */
export function assertInputNames(names: string[]): void {
  for (const name of names) {
    const plain =
      name.length > 0 &&
      name !== "." &&
      name !== ".." &&
      !name.includes("/") &&
      !name.includes("\0") &&
      Buffer.byteLength(name) <= 255;
    if (!plain)
      throw new SwarmError("INVALID_INPUT_NAME", `input name ${JSON.stringify(name)} is not a plain file name`);
  }
}
