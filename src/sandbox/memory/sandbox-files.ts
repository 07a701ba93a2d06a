import { InMemoryFs } from "just-bash";

/** Where the agent finds its files and its inputs, as in every sandbox. */
export const WORK_DIR = "/work";
export const INPUTS_DIR = "/inputs";

/** A sandbox's file system, held in memory: an empty `/work` and an empty `/inputs`. */
export function emptyFiles(): InMemoryFs {
  const files = new InMemoryFs();
  files.mkdirSync(WORK_DIR, { recursive: true });
  files.mkdirSync(INPUTS_DIR, { recursive: true });
  return files;
}

/** A new file system whose `/work` is a copy of `parent`'s now (its inputs and the rest stay behind). */
export async function forkFiles(parent: InMemoryFs): Promise<InMemoryFs> {
  const files = emptyFiles();
  // Sorted, a folder comes before what it holds.
  const paths = parent
    .getAllPaths()
    .filter((path) => path.startsWith(`${WORK_DIR}/`))
    .sort();
  for (const path of paths) {
    const stat = await parent.lstat(path);
    if (stat.isSymbolicLink) await files.symlink(await parent.readlink(path), path);
    else if (stat.isDirectory) files.mkdirSync(path, { recursive: true });
    else files.writeFileSync(path, await parent.readFileBuffer(path), undefined, { mode: stat.mode });
  }
  return files;
}

/** Put `/inputs/<name>` for every file (names are checked by the caller). */
export async function writeInputFiles(files: InMemoryFs, inputs: Record<string, string>): Promise<void> {
  for (const [name, content] of Object.entries(inputs)) await files.writeFile(`${INPUTS_DIR}/${name}`, content);
}
