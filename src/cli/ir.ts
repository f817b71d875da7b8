/**
 * `fedtensor ir <module> [export]`: prints the signature and the IR (JSON) of a program that a
 * compiled JavaScript module exports, for inspection and for storing programs.
 */
import { pathToFileURL } from "node:url";
import { resolve } from "node:path";
import { existsSync } from "node:fs";
import { ftError } from "../errors/error.js";
import { Program, signatureOf } from "../front/program.js";
import { printType } from "../ir/print.js";
import { mapReduceForm, partNames } from "../transform/mapreduce.js";
import { UsageError, type Command } from "./command.js";

export const irCommand: Command = {
  name: "ir",
  summary: "print a program's signature and IR as JSON",
  usage: [
    "usage: fedtensor ir <module.js> [export] [--signature | --mapreduce]",
    "",
    "  module.js     a JavaScript module that exports programs (compiled TypeScript)",
    "  export        the export to print (default: every exported program)",
    "  --signature   print only the signatures, the aggregations each program uses and its",
    "                releases (mechanism, clip, noise multiplier, zCDP cost per call)",
    "  --mapreduce   print each program's MapReduce form: its parts (prepare, work, zero,",
    "                accumulate, merge, report, update) with their signatures, and the",
    "                accumulator's type; FT313-FT315 say why a program has none",
    "",
    "  The module is imported, so its top-level code runs: put a training loop in a main()",
    "  called only when the module is the program started, as the examples do:",
    "    if (import.meta.url === pathToFileURL(process.argv[1] ?? \"\").href) await main();",
  ].join("\n"),
  async run(args) {
    const flags = args.filter((a) => a.startsWith("--"));
    const unknown = flags.filter((f) => f !== "--signature" && f !== "--mapreduce");
    if (unknown.length > 0) throw new UsageError(`unknown option ${unknown.join(", ")}`);
    if (flags.includes("--signature") && flags.includes("--mapreduce")) throw new UsageError("--signature and --mapreduce exclude each other");
    const [file, exportName, ...extra] = args.filter((a) => !a.startsWith("--"));
    if (file === undefined || extra.length > 0) throw new UsageError("expected a module and at most one export name");
    const path = resolve(file);
    if (!existsSync(path)) throw ftError("FT304", { path: file, why: "no such file" });
    const module = (await import(pathToFileURL(path).href)) as Record<string, unknown>;
    const programs = Object.entries(module).filter(
      ([name, value]) => value instanceof Program && (exportName === undefined || name === exportName),
    ) as [string, Program][];
    if (programs.length === 0) {
      throw new UsageError(exportName === undefined ? `${file} exports no program` : `${file} has no program export '${exportName}'`);
    }
    const onlySignatures = flags.includes("--signature");
    if (flags.includes("--mapreduce")) {
      for (const [name, p] of programs) console.log(printMapReduce(name, p));
      return 0;
    }
    for (const [name, p] of programs) {
      const signature = [`${name}: ${p.signature}`, ...p.aggregations.map((line) => `  ${line}`), ...p.privacy.map((line) => `  ${line}`)].join("\n");
      const json = { export: name, signature: p.signature, aggregators: p.aggregators, aggregations: p.aggregations, privacy: p.privacy, ir: p.ir };
      console.log(onlySignatures ? signature : JSON.stringify(json, null, 2));
    }
    return 0;
  },
};

/** A program's MapReduce form as text: one line per part, and the accumulator's type. */
function printMapReduce(name: string, p: Program): string {
  const form = mapReduceForm(p.ir);
  const width = Math.max(...partNames.map((n) => n.length));
  return [
    `${name}: ${p.signature}`,
    ...partNames.map((part) => `  ${part.padEnd(width)}  ${signatureOf(form.parts[part].ir)}`),
    `  accumulator: <${form.accumulator.map(printType).join(",")}> (fixed: the same for any number of clients)`,
  ].join("\n");
}
