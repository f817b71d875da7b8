#!/usr/bin/env node
// npm's `prepare`: builds dist/ only when a source is newer than the build's last output.
// Why: `npx fedtensor` inside the checkout installs the checkout as a package, which runs
// `prepare` each time; a full `npm run build` there took over a minute on every call. A fresh
// clone (no dist/) and any edit since the last build still build as before.
import { spawnSync } from "node:child_process";
import { readdirSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
// The build's last step writes this file, so it is older than a source only when a build is due.
const lastOutput = join(root, "dist/page/client.js");
const sources = ["src", "types", "checker-plugin", "examples", "bench", "package.json", "package-lock.json", "tsconfig.json", "tsconfig.build.json"];

/** The newest modification time under `path` (a file or a folder), skipping node_modules. */
function newest(path) {
  let stats;
  try {
    stats = statSync(path);
  } catch {
    return 0;
  }
  if (!stats.isDirectory()) return stats.mtimeMs;
  return readdirSync(path)
    .filter((name) => name !== "node_modules")
    .reduce((most, name) => Math.max(most, newest(join(path, name))), stats.mtimeMs);
}

let built;
try {
  built = statSync(lastOutput).mtimeMs;
} catch {
  built = -1;
}
const source = Math.max(...sources.map((name) => newest(join(root, name))));
if (built >= source) {
  console.error("fedtensor: dist/ is up to date with the sources; not rebuilding (npm run build forces it)");
} else {
  const npm = process.platform === "win32" ? "npm.cmd" : "npm";
  const build = spawnSync(npm, ["run", "build"], { cwd: root, stdio: "inherit", shell: process.platform === "win32" });
  process.exitCode = build.status ?? 1;
}
