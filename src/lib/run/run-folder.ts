/**
 * The output folder of a run: created one level at a time (Node's recursive mkdir spins
 * forever at 100% CPU on /proc paths), refused where files cannot live, and checked for
 * the files of another run, which a new run must never mix with.
 */
import type { Stats } from "node:fs";
import { mkdir, readdir, rm, stat, statfs } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { ftError } from "../../errors/error.js";
import { isCheckpointArtifact } from "./checkpoint.js";
import { evaluationFiles } from "./evaluation-files.js";
import { SECRET_FILE } from "../privacy/secret.js";
import { tempFileBase } from "./atomic-file.js";
import { fileFault } from "./file-faults.js";
import { supersededMetricsPattern } from "./metrics.js";

/** Linux file systems that hold kernel state, not files (statfs magic numbers from linux/magic.h). */
const virtualFileSystems: ReadonlyMap<number, string> = new Map([
  [0x9fa0, "proc"],
  [0x62656572, "sysfs"],
  [0x27e0eb, "cgroup"],
  [0x63677270, "cgroup2"],
  [0x64626720, "debugfs"],
  [0x74726163, "tracefs"],
  [0x73636673, "securityfs"],
  [0xcafe4a11, "bpf"],
  [0x62656570, "configfs"],
]);

/** The path's stats, or undefined when it or a folder above it is missing or a file. */
async function statIfPresent(path: string): Promise<Stats | undefined> {
  try {
    return await stat(path);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    // ENOTDIR: a file further up the path; the caller walks on up to find and name it.
    if ((code === "ENOENT" || code === "ENOTDIR") && dirname(path) !== path) return undefined;
    throw fileFault(error, path, "look up the output folder");
  }
}

/** Creates `dir` and the folders above it that are missing; FT307 where that cannot be. */
export async function makeRunFolder(dir: string): Promise<void> {
  const target = resolve(dir);
  const missing: string[] = [];
  let existing = target;
  for (;;) {
    const stats = await statIfPresent(existing);
    if (stats !== undefined) {
      if (stats.isDirectory()) break;
      throw ftError("FT307", {
        path: existing,
        why: existing === target ? "the output folder is a file" : `is a file, so the output folder ${target} cannot be made under it`,
      });
    }
    missing.unshift(existing);
    existing = dirname(existing);
  }
  if (process.platform === "linux") {
    const kind = virtualFileSystems.get((await statfs(existing)).type);
    if (kind !== undefined) throw ftError("FT307", { path: target, why: `is in a ${kind} file system, which holds kernel state, not files` });
  }
  for (const folder of missing) {
    try {
      await mkdir(folder);
    } catch (error) {
      // Another process may have made it since the walk: then it is there, as wanted.
      const madeMeanwhile = (error as NodeJS.ErrnoException).code === "EEXIST" && (await statIfPresent(folder))?.isDirectory() === true;
      if (!madeMeanwhile) throw fileFault(error, folder, "create the output folder");
    }
  }
}

const evaluationFileNames: ReadonlySet<string> = new Set(Object.values(evaluationFiles));

/** Files that `fedtensor run` writes into its folder (the lock aside), and the temp files of their writes. */
function isRunFile(name: string): boolean {
  const written = tempFileBase(name);
  if (written !== undefined) return isRunFile(written);
  return (
    isCheckpointArtifact(name) ||
    /^metrics\.(jsonl|csv)(\.tmp-\d+)?$/.test(name) ||
    supersededMetricsPattern.test(name) ||
    /^plot\.(svg|png)$/.test(name) ||
    evaluationFileNames.has(name) ||
    name === SECRET_FILE ||
    // fedtensor serve's log (src/deploy/server/coordinator.ts logFileName).
    name === "serve.log"
  );
}

/**
 * Makes `dir` ready for a new run: FT305 when it holds another run's files, unless
 * `overwrite`, which deletes them (and nothing else of the folder's).
 */
export async function prepareNewRunFolder(dir: string, overwrite: boolean): Promise<void> {
  let names: string[];
  try {
    names = (await readdir(dir)).filter(isRunFile).sort();
  } catch (error) {
    throw fileFault(error, dir, "list the output folder");
  }
  if (names.length === 0) return;
  if (!overwrite) {
    const shown = names.length > 3 ? `${names.slice(0, 3).join(", ")} and ${names.length - 3} more` : names.join(", ");
    throw ftError("FT305", {
      option: "--out",
      why: `${dir} holds another run (${shown}); give --resume to continue it or --overwrite to replace it`,
    });
  }
  try {
    await Promise.all(names.map((name) => rm(join(dir, name), { force: true })));
  } catch (error) {
    throw fileFault(error, dir, "delete the previous run's files");
  }
}
