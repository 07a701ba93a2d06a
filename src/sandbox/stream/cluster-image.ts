import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { nodeIdentity } from "../../harness/harness-build.ts";
import { HARNESS_FILES } from "../../harness/harness-files.ts";
import { ensureHarnessBundle, HARNESS_DIR, HARNESS_NODE_FLAGS, SWARMD_ROOT } from "../../harness/launch.ts";
import { AS_HARNESS_USER, IN_CONTAINER, SANDBOX_USER } from "../docker/container-options.ts";
import { defaultSandboxImage } from "../docker/sandbox-image.ts";

/** The repository of the cluster image; its tag is a content hash (`clusterImageTag`). */
export const CLUSTER_IMAGE_REPOSITORY = "swarmd-sandbox-cluster";

/** The label the build puts on the image: its content hash, in full. */
export const CLUSTER_IMAGE_LABEL = "swarmd.cluster-image";

/**
 * The packages the built harness still requires from node_modules when it runs, with what they
 * require (see harness-build.ts): photon-node (WebAssembly, pi's image resizing), and the stand-ins'
 * jiti and cli-highlight (deferred.ts: loaded if ever used). Not the SDKs of providers the gateway
 * refuses (never loaded by a harness), nor clipboard and koffi (pi's terminal interface only).
 * Everything else the harness runs is in its scripts.
 */
const RUNTIME_PACKAGES = ["@silvia-odwyer/photon-node", "jiti", "cli-highlight"];

/** What goes into the image and how; a change here is a new image. */
const RECIPE = "1";

/** The scripts of dist/harness the tag is made from: the caches and the build record follow from them and the node. */
const HASHED_FILES = [
  HARNESS_FILES.boot,
  HARNESS_FILES.main,
  HARNESS_FILES.pi,
  HARNESS_FILES.supervisor,
  HARNESS_FILES.packageJson,
];

/** What a cluster image is made of: the base image, dist/harness, these folders of node_modules (relative to the root). */
export interface ClusterImagePlan {
  tag: string;
  hash: string;
  baseImage: string;
  harnessDir: string;
  packages: string[];
  /** The image's command (`clusterContainerCommand`). */
  command: string[];
}

/**
 * The cluster image's plan, the harness built first when stale. The hash is over what the image
 * holds: the base image's tag, node, the harness's node flags and scripts, and the name, version
 * and place of every package copied. The same function gives the build (scripts/build-sandbox-image.sh
 * through scripts/cluster-image-plan.ts) and the daemon its tag.
 */
export function clusterImagePlan(baseImage = defaultSandboxImage()): ClusterImagePlan {
  const harnessDir = ensureHarnessBundle();
  const packages = packageClosure(RUNTIME_PACKAGES);
  const hash = createHash("sha256");
  const add = (name: string, value: string | Buffer) => hash.update(`${name}\0${value.length}\0`).update(value);
  add("recipe", RECIPE);
  add("base", baseImage);
  add("node", nodeIdentity());
  add("flags", HARNESS_NODE_FLAGS.join(" "));
  add("command", JSON.stringify(clusterContainerCommand()));
  for (const file of HASHED_FILES) add(file, readFileSync(join(harnessDir, file)));
  for (const dir of packages) add(dir, readFileSync(join(SWARMD_ROOT, dir, "package.json")));
  const hex = hash.digest("hex");
  return {
    tag: `${CLUSTER_IMAGE_REPOSITORY}:${hex.slice(0, 12)}`,
    hash: hex,
    baseImage,
    harnessDir: relative(SWARMD_ROOT, harnessDir),
    packages,
    command: clusterContainerCommand(),
  };
}

/**
 * `swarmd-sandbox-cluster:<12 hex>`: the image a cluster sandbox of this installation runs. Hashed
 * again only after the harness was built again (its build record changed). `baseImage`: the
 * sandbox image it is built from (scripts/build-cluster-image.sh takes `SANDBOX_IMAGE`).
 */
export function clusterImageTag(baseImage = defaultSandboxImage()): string {
  const record = `${baseImage}\0${readFileSync(join(ensureHarnessBundle(), HARNESS_FILES.inputs), "utf8")}`;
  if (cachedTag?.record !== record) cachedTag = { record, tag: clusterImagePlan(baseImage).tag };
  return cachedTag.tag;
}

let cachedTag: { record: string; tag: string } | undefined;

/**
 * A cluster sandbox's command: started as root, it becomes the harness's user at once keeping only
 * the harness's capabilities (as the docker runtime's harness exec does), and runs the supervisor,
 * which starts the harness with the same node and flags.
 */
export function clusterContainerCommand(): string[] {
  return [
    ...AS_HARNESS_USER,
    "node",
    ...HARNESS_NODE_FLAGS,
    join(IN_CONTAINER.swarmdRoot, HARNESS_DIR, HARNESS_FILES.supervisor),
    "--control",
    IN_CONTAINER.control,
    "--work",
    IN_CONTAINER.work,
    "--inputs",
    IN_CONTAINER.inputs,
    "--agent-uid",
    String(SANDBOX_USER.uid),
    "--agent-gid",
    String(SANDBOX_USER.gid),
  ];
}

/** The folders (relative to the root) of `names` and every package they depend on, found as node finds them. */
function packageClosure(names: string[]): string[] {
  const found = new Set<string>();
  const visit = (name: string, from: string) => {
    const dir = locate(name, from);
    if (!dir) throw new Error(`the harness needs ${name}, which is not installed (from ${from || "the root"})`);
    const rel = relative(SWARMD_ROOT, dir);
    if (found.has(rel)) return;
    found.add(rel);
    const pkg = JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as {
      dependencies?: Record<string, string>;
      optionalDependencies?: Record<string, string>;
    };
    for (const dep of Object.keys(pkg.dependencies ?? {})) visit(dep, dir);
    for (const dep of Object.keys(pkg.optionalDependencies ?? {})) if (locate(dep, dir)) visit(dep, dir);
  };
  for (const name of names) visit(name, SWARMD_ROOT);
  return [...found].sort();
}

/** Where node would find package `name` required from a file in `from`: the nearest node_modules up the tree. */
function locate(name: string, from: string): string | undefined {
  for (let dir = from; dir.startsWith(SWARMD_ROOT); dir = dirname(dir)) {
    const candidate = join(dir, "node_modules", name);
    if (existsSync(join(candidate, "package.json"))) return candidate;
    if (dir === SWARMD_ROOT) break;
  }
  return undefined;
}
