/**
 * `fedtensor init <folder>`: a new project that depends on fedtensor (docs/guide.md, "Your own
 * project"): package.json, .npmrc, the tsconfig with the checker plugin, an example program,
 * vitest and tsd tests. Writes into a folder that does not exist or is empty, never over files.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { basename, dirname, join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { initFiles, type InitVersions } from "./init-files.js";
import { shown, UsageError, type Command } from "./command.js";

const usage = [
  "usage: fedtensor init <folder>",
  "",
  "  folder   where to write the new project (created; if it exists it must be empty);",
  "           its name is the package name",
  "",
  "Then: cd <folder> && npm install && npm start && npm test",
].join("\n");

interface Manifest {
  readonly version: string;
  readonly devDependencies: Record<string, string>;
  readonly allowScripts: Record<string, boolean>;
}

/** fedtensor's version, and the tool versions it is tested with, from its own package.json. */
function versions(): InitVersions {
  const path = createRequire(import.meta.url).resolve("fedtensor/package.json");
  const manifest = JSON.parse(readFileSync(path, "utf8")) as Manifest;
  const dev = (name: string): string => {
    const version = manifest.devDependencies[name];
    if (version === undefined) throw new Error(`fedtensor's package.json has no devDependency ${name}`);
    return version;
  };
  return {
    fedtensor: manifest.version,
    typescript: dev("typescript"),
    vitest: dev("vitest"),
    tsd: dev("tsd"),
    typesNode: dev("@types/node"),
    deniedScripts: Object.keys(manifest.allowScripts).filter((name) => manifest.allowScripts[name] === false),
  };
}

/** npm's rule for a new package's name: lower case, URL-safe, at most 214 characters. */
const packageName = /^(?:@[a-z0-9-~][a-z0-9-._~]*\/)?[a-z0-9-~][a-z0-9-._~]*$/;

export const initCommand: Command = {
  name: "init",
  summary: "write a new project: package.json, tsconfig with the plugin, an example, tests",
  usage,
  async run(args) {
    let parsed;
    try {
      parsed = parseArgs({ args: [...args], options: {}, allowPositionals: true, strict: true });
    } catch (error) {
      throw new UsageError((error as Error).message);
    }
    if (parsed.positionals.length !== 1) throw new UsageError("expected one folder to create");
    const folder = resolve(parsed.positionals[0]!);
    const name = basename(folder);
    if (!packageName.test(name) || name.length > 214) {
      throw new UsageError(`${name} cannot be an npm package name (lower case letters, digits, - . _ ~): choose another folder name`);
    }
    if (existsSync(folder) && readdirSync(folder).length > 0) throw new UsageError(`${shown(folder)} exists and is not empty; init writes only into a new or empty folder`);
    for (const [path, text] of Object.entries(initFiles(name, versions()))) {
      const target = join(folder, path);
      mkdirSync(dirname(target), { recursive: true });
      writeFileSync(target, text, { flag: "wx" });
    }
    const cd = shown(folder);
    console.log([`wrote ${cd}/`, "", "Next:", `  cd ${cd}`, "  npm install", "  npm start", "  npm test"].join("\n"));
    return 0;
  },
};
