/**
 * Language services over the fixture project for tests and the overhead bench: the plain one
 * TypeScript makes, and the same service decorated by the checker plugin as tsserver would do
 * it. Files are held in memory, so a test can write sources inline and apply edits.
 */
import { mkdirSync, symlinkSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { pluginEntry, pluginName } from "../options.js";
import { createPlugin } from "../plugin.js";

import { applyChanges } from "../verified-fixes.js";

export { applyChanges };

/** This package's root, found upwards from here, so the same from the sources and compiled into dist/ (for the bench). */
function packageRoot(): string {
  for (let dir = dirname(fileURLToPath(import.meta.url)); dirname(dir) !== dir; dir = dirname(dir)) {
    const manifest = ts.sys.readFile(join(dir, "package.json"));
    if (manifest !== undefined && (JSON.parse(manifest) as { name?: string }).name === "fedtensor") return dir;
  }
  throw new Error("the checker-plugin tests run inside the fedtensor package");
}

export const repoRoot = packageRoot();
export const fixtureProject = join(repoRoot, "checker-plugin/test/fixtures/project");

/**
 * Makes `fedtensor` resolve from a project as it does for a user who installed it: a link
 * node_modules/fedtensor to this package (built by `npm run build`). Idempotent, and safe when
 * test files running in parallel race to create it.
 */
export function linkFedTensor(projectDir: string = fixtureProject): void {
  const link = join(projectDir, "node_modules", "fedtensor");
  if (ts.sys.directoryExists(link)) return;
  mkdirSync(dirname(link), { recursive: true });
  try {
    // A junction needs no privileges on Windows; elsewhere it is an ordinary symlink.
    symlinkSync(relative(dirname(link), repoRoot) || ".", link, "junction");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
  }
}

/** The compiler options of a project's tsconfig.json, and the texts of its files. */
export function readProject(projectDir: string): { options: ts.CompilerOptions; files: { [fileName: string]: string } } {
  const config = ts.getParsedCommandLineOfConfigFile(join(projectDir, "tsconfig.json"), {}, {
    ...ts.sys,
    onUnRecoverableConfigFileDiagnostic: (d) => {
      throw new Error(ts.flattenDiagnosticMessageText(d.messageText, "\n"));
    },
  });
  if (config === undefined) throw new Error(`cannot read ${projectDir}/tsconfig.json`);
  return { options: config.options, files: Object.fromEntries(config.fileNames.map((f) => [f, ts.sys.readFile(f) ?? ""])) };
}

export interface Services {
  readonly plain: ts.LanguageService;
  readonly plugin: ts.LanguageService;
  /** What the plugin wrote to the tsserver log. */
  readonly log: string[];
  /** Sets a file's text (a new file, or an edit), as an editor's buffer would. */
  setFile(fileName: string, text: string): void;
  text(fileName: string): string;
}

/**
 * Plain and plugin language services over `files` (absolute path to text) with a project's
 * compiler options; the plugin gets the project's tsconfig entry for it, as from tsserver, or
 * `pluginConfig`.
 */
export function createServices(files: { readonly [fileName: string]: string }, projectDir: string = fixtureProject, pluginConfig?: object): Services {
  const { options } = readProject(projectDir);
  const texts = new Map(Object.entries(files));
  const versions = new Map<string, number>();
  const host: ts.LanguageServiceHost = {
    getCompilationSettings: () => options,
    getScriptFileNames: () => [...texts.keys()],
    getScriptVersion: (f) => String(versions.get(f) ?? 0),
    getScriptSnapshot: (f) => {
      const text = texts.get(f) ?? ts.sys.readFile(f);
      return text === undefined ? undefined : ts.ScriptSnapshot.fromString(text);
    },
    getCurrentDirectory: () => projectDir,
    getDefaultLibFileName: (options) => ts.getDefaultLibFilePath(options),
    fileExists: (f) => texts.has(f) || ts.sys.fileExists(f),
    readFile: (f) => texts.get(f) ?? ts.sys.readFile(f),
    readDirectory: ts.sys.readDirectory,
    directoryExists: ts.sys.directoryExists,
    getDirectories: ts.sys.getDirectories,
    realpath: ts.sys.realpath,
  };
  const plain = ts.createLanguageService(host, ts.createDocumentRegistry());
  const log: string[] = [];
  const info = {
    languageService: ts.createLanguageService(host, ts.createDocumentRegistry()),
    languageServiceHost: host,
    project: { projectService: { logger: { info: (message: string) => log.push(message) } } },
    config: pluginConfig ?? pluginEntry(options) ?? { name: pluginName },
  } as unknown as ts.server.PluginCreateInfo;
  const plugin = createPlugin({ typescript: ts }).create(info);
  return {
    plain,
    plugin,
    log,
    setFile(fileName, text) {
      texts.set(fileName, text);
      versions.set(fileName, (versions.get(fileName) ?? 0) + 1);
    },
    text: (fileName) => texts.get(fileName) ?? "",
  };
}

/** A quick fix offered in a test file, and the file of its own that holds the fixed text. */
export interface AppliedFix {
  readonly description: string;
  readonly fileName: string;
}

/**
 * Applies every quick fix of every diagnostic in each named case's file (`fileOf(name)`) to a
 * file of its own (`fileOf("<name>.fix<i>")`), all added at once, so that the checker runs
 * over one program for the cases and one for the fixed files.
 */
export function applyEveryFix(services: Services, names: readonly string[], fileOf: (name: string) => string): Map<string, AppliedFix[]> {
  const fixedTexts = new Map<string, string>();
  const fixesByName = new Map<string, AppliedFix[]>();
  for (const name of names) {
    const fileName = fileOf(name);
    const fixes = services.plain.getSemanticDiagnostics(fileName).flatMap((d) =>
      services.plugin.getCodeFixesAtPosition(fileName, d.start!, d.start! + d.length!, [d.code], {}, {}).map((fix, i) => {
        const fixedFile = fileOf(`${name}.fix${i}`);
        fixedTexts.set(fixedFile, applyChanges(services.text(fileName), fix.changes[0]!.textChanges));
        return { description: fix.description, fileName: fixedFile };
      }),
    );
    fixesByName.set(name, fixes);
  }
  for (const [fileName, text] of fixedTexts) services.setFile(fileName, text);
  return fixesByName;
}

/** The FedTensor hover line at a position of a file. */
export function hoverAt(services: Services, fileName: string, position: number): string | undefined {
  return services.plugin.getQuickInfoAtPosition(fileName, position)?.documentation?.[0]?.text;
}

/** The FedTensor hover line of the value right after the file's `/*hover*\/` marker. */
export function hoverAtMarker(services: Services, fileName: string): string | undefined {
  const marker = "/*hover*/";
  return hoverAt(services, fileName, services.text(fileName).indexOf(marker) + marker.length);
}

/** Every syntactic and semantic diagnostic of a file through the plugin, as text. */
export function errorsOf(services: Services, fileName: string): string[] {
  return [...services.plugin.getSyntacticDiagnostics(fileName), ...services.plugin.getSemanticDiagnostics(fileName)].map((d) =>
    ts.flattenDiagnosticMessageText(d.messageText, "\n"),
  );
}
