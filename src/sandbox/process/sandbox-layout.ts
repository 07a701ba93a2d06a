import { join } from "node:path";
import { CONTROL_FILES } from "../../harness/protocol.ts";

/** Sandbox ids become folder and cgroup names, so they must be one plain path segment. */
const SANDBOX_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

export function isValidSandboxId(sandboxId: string): boolean {
  return SANDBOX_ID.test(sandboxId);
}

/** Host paths of one sandbox's folder. */
export interface SandboxLayout {
  root: string;
  work: string;
  inputs: string;
  control: string;
  /** HOME of an unisolated harness (bubblewrap gives it a tmpfs instead). */
  home: string;
  /** Where input files are written before being renamed into `inputs/`, so none is seen half-written. */
  staging: string;
  /** The ownership record. */
  record: string;
  socket: string;
  output: string;
  spec: string;
}

export function sandboxesDir(dataDir: string): string {
  return join(dataDir, "sandboxes");
}

export function sandboxLayout(dataDir: string, sandboxId: string): SandboxLayout {
  return layoutAt(join(sandboxesDir(dataDir), sandboxId));
}

/** Where the pool keeps sandboxes no agent took yet (`sandbox-pool.ts`): moved into `sandboxes/` when taken. */
export function poolDir(dataDir: string): string {
  return join(dataDir, "pool");
}

/** The layout of a sandbox folder at `root`. */
export function layoutAt(root: string): SandboxLayout {
  const control = join(root, "control");
  return {
    root,
    work: join(root, "work"),
    inputs: join(root, "inputs"),
    control,
    home: join(root, "home"),
    staging: join(root, "staging"),
    record: join(root, "sandbox.json"),
    socket: join(control, CONTROL_FILES.socket),
    output: join(control, CONTROL_FILES.output),
    spec: join(control, CONTROL_FILES.spec),
  };
}
