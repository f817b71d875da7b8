/**
 * Finding and reading the data files that ship with installed packages; nothing is
 * downloaded. Every failure is an FT304 error naming the file and how to install it.
 */
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { gunzipSync } from "node:zlib";
import { ftError } from "../../errors/error.js";

const GZIP_MAGIC = [0x1f, 0x8b] as const;

/**
 * Reads a data file whole, gunzipping it when it starts with the gzip magic bytes.
 * A missing file is an FT304 error whose reason ends with `installHint`.
 */
export function readDataFile(path: string, installHint: string): Uint8Array {
  let raw: Buffer;
  try {
    raw = readFileSync(path);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const why = code === "ENOENT" ? `file not found; ${installHint}` : `cannot read: ${(error as Error).message}`;
    throw ftError("FT304", { path, why });
  }
  if (raw[0] !== GZIP_MAGIC[0] || raw[1] !== GZIP_MAGIC[1]) return raw;
  try {
    return gunzipSync(raw);
  } catch (error) {
    throw ftError("FT304", { path, why: `corrupt gzip data: ${(error as Error).message}` });
  }
}

/**
 * The folder `subdir` inside an installed npm package, found through Node's module
 * resolution from this file; `pinned` (name@version) goes into the install hint.
 */
export function packageDataDir(packageName: string, subdir: string, pinned: string): string {
  try {
    const manifest = createRequire(import.meta.url).resolve(`${packageName}/package.json`);
    return join(dirname(manifest), subdir);
  } catch {
    throw ftError("FT304", { path: packageName, why: `package not found; ${npmInstallHint(pinned)}` });
  }
}

export function npmInstallHint(pinned: string): string {
  return `install it with: npm i -E ${pinned}`;
}
