import { parseCommandArgs, positionals, readJsonArg, usage } from "./args.ts";
import { type CliContext, COMMON_OPTIONS, printJson } from "./cli-context.ts";
import { EXIT, type ExitCode } from "./exit-codes.ts";

/**
 * `swarm specs add <spec.json> [--name NAME] [--no-overwrite] | list | rm <name>`: the local cache
 * of saved specs the bridge's `swarm_spec_*` tools also use. Never calls the service.
 */
export async function specsCommand(ctx: CliContext, args: string[]): Promise<ExitCode> {
  const { values, positionals: given } = parseCommandArgs("specs", args, {
    ...COMMON_OPTIONS,
    name: { type: "string" },
    "no-overwrite": { type: "boolean", default: false },
  });
  const [action = "", ...rest] = given;
  const store = await ctx.specs();
  switch (action) {
    case "add": {
      const [file = ""] = positionals("specs", rest, ["spec.json"]);
      const saved = store.add(readJsonArg("specs", file), { name: values.name, overwrite: !values["no-overwrite"] });
      if (values.json) printJson(ctx.io, { name: saved.name, file: saved.file, replaced: saved.replaced });
      else ctx.io.out(`${saved.replaced ? "replaced" : "saved"} ${saved.name} (${saved.file})\n`);
      return EXIT.OK;
    }
    case "list":
    case "ls": {
      positionals("specs", rest, []);
      const { specs, problems } = store.list();
      for (const problem of problems) ctx.io.err(`swarm: ${problem}\n`);
      if (values.json)
        printJson(ctx.io, {
          dir: store.dir,
          specs: specs.map((s) => ({ name: s.name, file: s.file, savedAt: s.savedAt, spec: s.spec })),
        });
      else if (specs.length === 0) ctx.io.err(`no saved specs in ${store.dir}\n`);
      else
        for (const s of specs)
          ctx.io.out(
            `${s.name.padEnd(24)} ${s.spec.model ? `model ${s.spec.model.provider}/${s.spec.model.id}` : `script (${s.spec.script?.length ?? 0} steps)`}\n`,
          );
      return EXIT.OK;
    }
    case "rm":
    case "remove": {
      const [name = ""] = positionals("specs", rest, ["name"]);
      const removed = store.remove(name);
      if (values.json) printJson(ctx.io, { name, removed });
      else if (removed) ctx.io.out(`removed ${name}\n`);
      else ctx.io.err(`swarm: no saved spec named ${name}; nothing removed\n`);
      return EXIT.OK;
    }
    default:
      throw usage(
        "specs",
        action ? `unknown specs action ${JSON.stringify(action)}` : "missing action (add, list or rm)",
      );
  }
}
