/**
 * `fedtensor exec <program.ts> [-p tsconfig] [-- args]`: type-checks a TypeScript program with
 * the checker plugin's rules (FT errors explained, as `fedtensor check` prints them), compiles
 * it with the project's own compiler options, and runs it. Its programs trace when it runs, and
 * an FT error thrown then is reported at the user's .ts line (the compiled files carry source
 * maps, and Node maps stack frames through them).
 *
 * Why the compiler API and not a TypeScript runner (tsx, ts-node): a runner strips types without
 * checking them, and FedTensor's placement and shape rules are types; the check and the build
 * use one compiler, the project's TypeScript 5.9, so there is no second dependency to pin.
 * Exit status: 0 the program ran, 1 type errors or the program failed, 2 bad usage.
 */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import type ts from "typescript";
import { readDiagnostics } from "../../checker-plugin/diagnostics.js";
import { FedTensorError } from "../errors/error.js";
import { pointAtUserCode } from "../errors/source-location.js";
import { formatDiagnostic, loadTypeScript, pluginOptions, readProject } from "./check.js";
import { shown, UsageError, type Command } from "./command.js";

const usage = [
  "usage: fedtensor exec <program.ts> [-p <tsconfig.json or folder>] [-- <arguments for the program>]",
  "",
  "  program.ts      the program to run: type-checked with the FedTensor checker plugin's rules,",
  "                  compiled with the project's compiler options, then run",
  "  -p, --project   the tsconfig.json whose options compile it (default: the nearest",
  "                  tsconfig.json above the program)",
  "",
  "The compiled files go to node_modules/.cache/fedtensor-exec/ beside the tsconfig.json.",
  "Arguments after -- reach the program as process.argv.slice(2).",
  "Exit status: 0 the program ran, 1 type errors or the program failed, 2 bad usage.",
].join("\n");

function readArguments(args: readonly string[]): { file: string; project: string | undefined; rest: string[] } {
  const split = args.indexOf("--");
  const own = split < 0 ? args : args.slice(0, split);
  const rest = split < 0 ? [] : args.slice(split + 1);
  let parsed;
  try {
    parsed = parseArgs({ args: [...own], options: { project: { type: "string", short: "p" } }, allowPositionals: true, strict: true });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const [file, ...extra] = parsed.positionals;
  if (file === undefined) throw new UsageError("expected the program to run, a .ts file");
  if (extra.length > 0) throw new UsageError(`expected one program, got ${parsed.positionals.join(", ")} (the program's own arguments go after --)`);
  return { file: resolve(file), project: parsed.values.project, rest };
}

/** Where the program's tsconfig is: the one named, else the nearest above the program. */
function findProject(typescript: typeof ts, file: string, project: string | undefined): string {
  if (project !== undefined) return project;
  const found = typescript.findConfigFile(dirname(file), typescript.sys.fileExists);
  if (found === undefined) throw new UsageError(`no tsconfig.json in ${shown(dirname(file))} or above it (fedtensor init writes one)`);
  return found;
}

/** The compiler options of the project, changed only where exec needs a build it can run. */
function buildOptions(options: ts.CompilerOptions, rootDir: string, outDir: string): ts.CompilerOptions {
  return {
    ...options,
    rootDir,
    outDir,
    noEmit: false,
    noEmitOnError: true,
    emitDeclarationOnly: false,
    declaration: false,
    declarationMap: false,
    composite: false,
    incremental: false,
    tsBuildInfoFile: undefined,
    sourceMap: false,
    inlineSourceMap: true,
    inlineSources: true,
  };
}

/** The package type ("module" or "commonjs") of the project's package.json, which Node would not find from node_modules/.cache. */
function packageType(projectDir: string): string {
  try {
    const manifest = JSON.parse(readFileSync(join(projectDir, "package.json"), "utf8")) as { type?: unknown };
    return manifest.type === "module" ? "module" : "commonjs";
  } catch {
    return "commonjs";
  }
}

export const execCommand: Command = {
  name: "exec",
  summary: "type-check a TypeScript program with the plugin's rules, then run it",
  usage,
  async run(args) {
    const { file, project, rest } = readArguments(args);
    const typescript = await loadTypeScript();
    if (!typescript.sys.fileExists(file)) throw new UsageError(`no program at ${shown(file)}`);
    const { configPath, config } = readProject(typescript, findProject(typescript, file, project));
    const projectDir = dirname(configPath);
    const rootDir = config.options.rootDir ?? projectDir;
    if (relative(rootDir, file).startsWith("..")) throw new UsageError(`${shown(file)} is outside the project's rootDir ${shown(rootDir)}`);
    const outDir = join(projectDir, "node_modules", ".cache", "fedtensor-exec");
    const options = pluginOptions(config, configPath);
    const program = typescript.createProgram({ rootNames: [file], options: buildOptions(config.options, rootDir, outDir) });
    const diagnostics = readDiagnostics(typescript, program, typescript.getPreEmitDiagnostics(program), options);
    for (const diagnostic of diagnostics) console.error(`${formatDiagnostic(typescript, diagnostic, options)}\n`);
    if (diagnostics.some((d) => d.diagnostic.category === typescript.DiagnosticCategory.Error)) {
      console.error(`fedtensor exec: ${shown(file)} was not run: fix the errors above (fedtensor check explains them too)`);
      return 1;
    }
    mkdirSync(outDir, { recursive: true });
    writeFileSync(join(outDir, "package.json"), `${JSON.stringify({ type: packageType(projectDir) })}\n`);
    const emitted = program.emit();
    if (emitted.emitSkipped) throw new UsageError(`${shown(file)} could not be compiled`);
    const output = join(outDir, relative(rootDir, file)).replace(/\.([mc]?)tsx?$/, ".$1js");
    // Stack frames of the compiled files read as the user's .ts lines, for FT errors and others.
    process.setSourceMapsEnabled(true);
    process.argv = [process.argv[0]!, file, ...rest];
    try {
      await import(pathToFileURL(output).href);
    } catch (thrown) {
      // An FT error is reported by the command line at the program's line (one thrown by run(), not
      // while tracing, gets its location here); any other error is the program's own, printed as Node would.
      if (thrown instanceof FedTensorError) throw pointAtUserCode(thrown, execCommand.run);
      console.error(thrown instanceof Error ? (thrown.stack ?? String(thrown)) : thrown);
      return 1;
    }
    return typeof process.exitCode === "number" ? process.exitCode : 0;
  },
};
