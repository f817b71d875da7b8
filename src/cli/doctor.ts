/**
 * `fedtensor check --doctor`: why an editor would or would not load the checker plugin for a
 * project. tsserver loads tsconfig plugins by resolving their name from the node_modules folder
 * that holds the TypeScript it runs, found from tsserver.js's real path (so a symlinked
 * TypeScript, as npm link, pnpm or a monorepo's hoisting make, searches where its files really
 * are), plus its probe locations (VS Code's typescript.tsserver.pluginPaths) and, with
 * --allowLocalPluginLoads, the tsconfig's folder. The doctor repeats that resolution with
 * TypeScript's own resolver and says what to change when it fails.
 */
import { existsSync, readFileSync, realpathSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, relative } from "node:path";
import type ts from "typescript";
import { pluginEntry, pluginName, readOptions } from "../../checker-plugin/options.js";
import { shown } from "./command.js";

interface Found {
  readonly path: string;
  readonly version: string;
}

/** A package as Node resolves it from `from`: its folder (real path) and version, or undefined. */
function packageFrom(from: string, name: string): Found | undefined {
  try {
    const manifest = realpathSync(createRequire(join(from, "noop.js")).resolve(`${name}/package.json`));
    return { path: dirname(manifest), version: (JSON.parse(readFileSync(manifest, "utf8")) as { version: string }).version };
  } catch {
    return undefined;
  }
}

/** TypeScript's resolver of plugin modules (internal to its API, as tsserver's host uses it). */
type ResolveJSModule = (moduleName: string, initialDir: string, host: ts.ModuleResolutionHost) => string;

/** Where tsserver would load the plugin from, searching from `dir` as it does, or why not. */
function pluginFrom(typescript: typeof ts, dir: string): { path?: string; error?: string } {
  const resolveJSModule = (typescript as unknown as { resolveJSModule?: ResolveJSModule }).resolveJSModule;
  try {
    const path = resolveJSModule === undefined ? createRequire(join(dir, "node_modules", "noop.js")).resolve(pluginName) : resolveJSModule(pluginName, join(dir, "node_modules"), typescript.sys);
    return existsSync(path) ? { path } : { error: `${path} is missing (run npm run build in fedtensor, or reinstall it)` };
  } catch {
    return { error: `no ${pluginName} under ${dir}` };
  }
}

export function doctor(typescript: typeof ts, configPath: string, config: ts.ParsedCommandLine): number {
  const projectDir = dirname(configPath);
  const problems: string[] = [];
  const say = (line: string): void => console.log(line);
  say(`fedtensor check --doctor: would an editor load ${pluginName} for ${shown(configPath)}?`);
  say(`  node ${process.version}`);

  const entry = pluginEntry(config.options);
  if (entry === undefined) {
    problems.push(`${shown(configPath)} has no plugins entry for it: add "plugins": [{ "name": "${pluginName}" }] to its compilerOptions`);
  } else {
    say(`  tsconfig plugins entry: ${JSON.stringify(entry)}`);
    for (const { option, why } of readOptions(entry).problems) problems.push(`FT305: plugin option ${option}: ${why}`);
  }

  const fedtensor = packageFrom(projectDir, "fedtensor");
  say(`  fedtensor for the project's imports: ${fedtensor === undefined ? "not found" : `${fedtensor.version} at ${fedtensor.path}`}`);
  if (fedtensor === undefined) problems.push("the project does not resolve fedtensor: npm install fedtensor");

  const workspaceTs = packageFrom(projectDir, "typescript");
  if (workspaceTs === undefined) {
    problems.push("the project resolves no typescript package, so the editor runs its own, which never loads the plugin: npm install --save-dev typescript@5.9");
  } else {
    say(`  typescript for the project (the editor's workspace version): ${workspaceTs.version} at ${workspaceTs.path}`);
    if (!workspaceTs.version.startsWith("5.9.")) problems.push(`typescript ${workspaceTs.version}: FedTensor needs 5.9.x (npm install --save-dev typescript@5.9)`);
    // tsserver searches from X/node_modules for X/node_modules/typescript/lib/tsserver.js, by its real path.
    const searched = dirname(workspaceTs.path);
    const found = pluginFrom(typescript, searched);
    say(`  tsserver looks for the plugin from ${searched}: ${found.path ?? found.error}`);
    if (found.path === undefined) {
      const local = pluginFrom(typescript, projectDir);
      const probe = relative(process.cwd(), projectDir) || ".";
      problems.push(
        local.path === undefined
          ? `the plugin resolves neither from the TypeScript's node_modules nor from ${shown(projectDir)}: install fedtensor in the project`
          : [
              `tsserver would not find the plugin: the TypeScript it runs lives in ${searched}, away from fedtensor (a symlinked or hoisted TypeScript).`,
              `    It resolves from ${shown(projectDir)} (${local.path}); tell tsserver to look there:`,
              `    VS Code settings.json: "typescript.tsserver.pluginPaths": ["${probe}"] (relative to the workspace folder)`,
              `    typescript-language-server or vtsls: a plugin entry { name: "${pluginName}", location: "${projectDir}" }`,
              `    tsserver itself: --pluginProbeLocations ${projectDir}`,
            ].join("\n"),
      );
    } else if (fedtensor !== undefined && !found.path.startsWith(fedtensor.path)) {
      say(`  note: the plugin (${found.path}) is not from the fedtensor the project imports (${fedtensor.path})`);
    }
  }

  if (problems.length === 0) {
    say(`The plugin loads in an editor that runs the project's TypeScript (VS Code: "TypeScript: Select TypeScript Version" > "Use Workspace Version").`);
    return 0;
  }
  say(`The plugin would not load:`);
  for (const problem of problems) say(`  - ${problem}`);
  return 1;
}
