/**
 * One writer per run folder: an exclusive lock file, `run.lock`, holding the pid, host and
 * start time of the process that writes the folder.
 *
 * Why not proper-lockfile: it proves its holder alive by touching the lock every few
 * seconds from a timer and declares the lock compromised when a touch is late, but a
 * training round runs synchronous kernels that block the event loop for longer than that;
 * and a killed holder's lock stays for the whole stale period (10 s by default), so a
 * `--resume` right after a crash would wait or fail. Asking the operating system whether the
 * holder's process still exists is exact and immediate on one machine.
 *
 * The lock appears whole or not at all: it is written to a temp file and hard-linked to its
 * name, and link() fails when the name exists. A lock whose process has ended (or whose pid
 * now belongs to another process, told by its start time in /proc) is stale and taken over:
 * renamed aside, checked to be the stale one that was judged, and removed. A lock from
 * another host cannot be checked and counts as held.
 */
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { link, readFile, rename, rm, writeFile } from "node:fs/promises";
import { hostname } from "node:os";
import { join } from "node:path";
import { ftError } from "../../errors/error.js";
import { fileFault } from "./file-faults.js";

export const lockFileName = "run.lock";

interface LockRecord {
  readonly pid: number;
  readonly host: string;
  /** When the holder took the lock (ISO 8601). */
  readonly since: string;
  /** The process's start time in clock ticks since boot (Linux), to tell a reused pid. */
  readonly processStart?: string;
  readonly command: string;
}

export interface RunFolderLock {
  readonly path: string;
  /** Removes the lock if it is still this process's. */
  release(): Promise<void>;
}

/** Field 22 (starttime) and field 3 (state) of /proc/<pid>/stat; undefined off Linux or when the process is gone. */
function procStat(pid: number): { start: string; state: string } | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, "utf8");
    // The command name (field 2) is in parentheses and may hold spaces, so fields count from its end.
    const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
    return { state: fields[0]!, start: fields[19]! };
  } catch {
    return undefined;
  }
}

function ownRecord(): LockRecord {
  const start = procStat(process.pid)?.start;
  return {
    pid: process.pid,
    host: hostname(),
    since: new Date().toISOString(),
    ...(start === undefined ? {} : { processStart: start }),
    command: process.argv.slice(1).join(" "),
  };
}

function parseRecord(text: string): LockRecord | undefined {
  try {
    const record = JSON.parse(text) as Partial<LockRecord>;
    return Number.isSafeInteger(record.pid) && typeof record.host === "string" ? (record as LockRecord) : undefined;
  } catch {
    return undefined;
  }
}

/** Whether the process that wrote `record` may still hold the lock. */
function holderAlive(record: LockRecord): boolean {
  if (record.host !== hostname()) return true;
  try {
    process.kill(record.pid, 0);
  } catch (error) {
    // EPERM: the process exists but belongs to another user.
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
  const stat = procStat(record.pid);
  if (stat === undefined) return true;
  // A zombie has ended; a different start time means the pid was reused by another process.
  return stat.state !== "Z" && (record.processStart === undefined || record.processStart === stat.start);
}

function describeHolder(record: LockRecord): string {
  return `process ${record.pid} on ${record.host} (${record.command}), running since ${record.since}`;
}

async function readLock(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw fileFault(error, path, "read the run folder's lock");
  }
}

/** Moves a stale lock out of the way, unless another process replaced it in the meantime. */
async function takeOverStale(path: string, staleText: string): Promise<void> {
  const aside = `${path}.stale-${process.pid}-${randomBytes(4).toString("hex")}`;
  try {
    await rename(path, aside);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return; // another process took it over first
    throw fileFault(error, path, "remove a stale lock");
  }
  if ((await readLock(aside)) !== staleText) {
    // A live process's fresh lock was moved: put it back (unless yet another took the name).
    await link(aside, path).catch(() => undefined);
  }
  await rm(aside, { force: true });
}

/**
 * Takes the lock of run folder `dir`, which must exist: FT308 naming the holder when a live
 * process has it, FT307 when the folder cannot hold a lock file.
 */
export async function lockRunFolder(dir: string): Promise<RunFolderLock> {
  const path = join(dir, lockFileName);
  const text = `${JSON.stringify(ownRecord())}\n`;
  const temp = `${path}.tmp-${process.pid}-${randomBytes(4).toString("hex")}`;
  try {
    await writeFile(temp, text);
  } catch (error) {
    await rm(temp, { force: true }).catch(() => undefined);
    throw fileFault(error, dir, "write the run folder's lock");
  }
  try {
    // A few takeovers at most: each either gets the lock or meets a live holder.
    for (let attempt = 0; attempt < 5; attempt++) {
      try {
        await link(temp, path);
        return { path, release: () => releaseLock(path, text) };
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw fileFault(error, path, "take the run folder's lock");
      }
      const heldText = await readLock(path);
      if (heldText === undefined) continue;
      const held = parseRecord(heldText);
      if (held === undefined) {
        throw ftError("FT308", { path: dir, holder: `an unknown process (${path} is not a FedTensor lock; delete it if no run uses the folder)` });
      }
      if (holderAlive(held)) throw ftError("FT308", { path: dir, holder: describeHolder(held) });
      await takeOverStale(path, heldText);
    }
    throw ftError("FT308", { path: dir, holder: "other processes: its lock changed hands five times while this one waited" });
  } finally {
    await rm(temp, { force: true });
  }
}

async function releaseLock(path: string, ownText: string): Promise<void> {
  if ((await readLock(path)) === ownText) await rm(path, { force: true });
}
