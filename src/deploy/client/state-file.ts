/**
 * The Node client's state storage (state.ts): one file per run and client,
 * `<state-dir>/<run>/<client>.state`, mode 0600 in folders of mode 0700, written whole or not
 * at all (a temp file beside it, flushed, renamed over it: src/lib/run/atomic-file.ts), so a
 * client killed while writing finds its last state, never a torn one. Nothing of it is sent.
 */
import { chmodSync, mkdirSync, statSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { homedir } from "node:os";
import { join } from "node:path";
import { ftError } from "../../errors/error.js";
import { writeFileAtomic } from "../../lib/run/atomic-file.js";
import type { ClientStateStorage } from "./state.js";

/** Where `fedtensor client` keeps its state without --state-dir. */
export const defaultStateDir = (): string => join(homedir(), ".fedtensor", "client-state");

/** A run's or a client's name as one path segment: letters, digits, '.', '_' and '-' kept, anything else '_'. */
const segment = (name: string): string => name.replace(/[^A-Za-z0-9._-]/g, "_").replace(/^\.+/, "_");

/** The folders are made on the first write (a client of stateless runs makes none); FT367 when they cannot be. */
export class FileStateStorage implements ClientStateStorage {
  constructor(private readonly dir: string) {}

  async read(run: string, client: string): Promise<Uint8Array | undefined> {
    try {
      return new Uint8Array(await readFile(this.describe(run, client)));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
      throw ftError("FT367", { path: this.dir, why: `cannot read ${this.describe(run, client)}: ${(error as Error).message}` });
    }
  }

  async write(run: string, client: string, bytes: Uint8Array): Promise<void> {
    this.folder(this.dir);
    this.folder(join(this.dir, segment(run)));
    try {
      await writeFileAtomic(this.describe(run, client), bytes, { mode: 0o600 });
    } catch (error) {
      throw ftError("FT367", { path: this.dir, why: `cannot write ${this.describe(run, client)}: ${(error as Error).message}` });
    }
  }

  describe(run: string, client: string): string {
    return join(this.dir, segment(run), `${segment(client)}.state`);
  }

  /** Makes `path` a folder of mode 0700 (FT367 when it cannot be one). */
  private folder(path: string): void {
    try {
      mkdirSync(path, { recursive: true, mode: 0o700 });
      if (!statSync(path).isDirectory()) throw new Error("not a folder");
      chmodSync(path, 0o700);
    } catch (error) {
      throw ftError("FT367", { path, why: (error as Error).message });
    }
  }
}
