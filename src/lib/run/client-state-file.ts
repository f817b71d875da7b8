/**
 * A checkpoint's client states (client-state.ts) as a companion file beside it,
 * `checkpoint-<round>.clients.safetensors`, written and read one client at a time, so that a
 * checkpoint of 10,000 clients' states costs the store's memory budget and one client's state,
 * not every client's at once (bench/client-state-memory.ts).
 *
 * A safetensors file (safetensors.ts) that PyTorch and NumPy open as it is: one F32 tensor per
 * client and state tensor, named `<client>.<name>`, clients in id order and each client's
 * tensors together in name order, so that a client's state is one run of bytes. Its metadata
 * says `format` ("fedtensor-client-states"), `format_version` ("1") and the round.
 *
 * The checkpoint names the file and holds the SHA-256 of all its bytes (ClientStatesRef), and
 * the checkpoint's own digest covers that: a companion truncated, damaged or taken from another
 * round is FT304 on resume.
 */
import { createHash } from "node:crypto";
import { open } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { ftError } from "../../errors/error.js";
import { elementCount } from "../data/host-tensor.js";
import type { HostParam } from "../models/model.js";
import { writeFileAtomic } from "./atomic-file.js";
import type { ClientStatesRef } from "./checkpoint-types.js";
import { ClientStateStore } from "./client-state.js";

const formatName = "fedtensor-client-states";
const formatVersion = "1";
const lengthBytes = 8;

/** The companion of checkpoint file `checkpointName` (checkpoint-<round>.safetensors). */
export const clientStatesFileName = (checkpointName: string): string => checkpointName.replace(/\.safetensors$/, ".clients.safetensors");

/** The length and header of a file of the store's states: every client's tensors in layout order (as copyBytes lays them), contiguous. */
function headerOf(store: ClientStateStore, round: number): Buffer {
  const { names, shapes } = store.stateLayout!;
  const header: Record<string, unknown> = { __metadata__: { format: formatName, format_version: formatVersion, round: String(round) } };
  const sizes = shapes.map((shape) => 4 * elementCount(shape));
  const clientBytes = sizes.reduce((a, b) => a + b, 0);
  store.clients().forEach((client, k) => {
    let offset = k * clientBytes;
    names.forEach((name, i) => {
      header[`${client}.${name}`] = { dtype: "F32", shape: [...shapes[i]!], data_offsets: [offset, (offset += sizes[i]!)] };
    });
  });
  const json = JSON.stringify(header);
  // Padded with spaces to a multiple of 8, as the reference writer does, so the data is aligned.
  const padded = Buffer.alloc(Math.ceil(Buffer.byteLength(json, "utf8") / 8) * 8, " ");
  padded.write(json, 0, "utf8");
  const length = Buffer.alloc(lengthBytes);
  length.writeBigUInt64LE(BigInt(padded.length));
  return Buffer.concat([length, padded]);
}

/**
 * Writes every accepted client state of `store` to `path` (atomically: whole or not at all),
 * one client at a time; what the checkpoint says of it. Undefined when no client has a state.
 */
export async function writeClientStates(path: string, store: ClientStateStore, round: number): Promise<ClientStatesRef | undefined> {
  if (store.size === 0) return undefined;
  const header = headerOf(store, round);
  const hash = createHash("sha256").update(header);
  // One buffer for every client in turn: the writer takes each before the next is copied in.
  const buffer = new Uint8Array(store.stateBytes);
  function* pieces(): Iterable<Uint8Array> {
    yield header;
    for (const client of store.clients()) {
      store.copyBytes(client, buffer);
      hash.update(buffer);
      yield buffer;
    }
  }
  await writeFileAtomic(path, pieces(), { mode: 0o600 });
  return { file: basename(path), clients: store.size, bytes: header.length + store.size * buffer.length, sha256: hash.digest("hex") };
}

/**
 * The client states a checkpoint at `checkpointPath` refers to, read one client at a time into
 * a store of `budgetBytes` (past which they spill as the run's do). FT304 when the file is
 * missing, is not the one the checkpoint names (its digest), or does not hold what it should.
 */
export async function readClientStates(checkpointPath: string, ref: ClientStatesRef, budgetBytes?: number): Promise<ClientStateStore> {
  const path = join(dirname(checkpointPath), basename(ref.file));
  const corrupt = (why: string) => ftError("FT304", { path, why });
  let handle;
  try {
    handle = await open(path, "r");
  } catch (error) {
    throw corrupt(`the checkpoint ${basename(checkpointPath)} keeps its clients' states in this file, which cannot be read (${(error as Error).message})`);
  }
  const store = new ClientStateStore(budgetBytes);
  try {
    const { size } = await handle.stat();
    if (size !== ref.bytes) throw corrupt(`${size} bytes where the checkpoint says ${ref.bytes}: truncated or another file`);
    const hash = createHash("sha256");
    /** `bytes` bytes at `at`, into `into` when given (reused from client to client), hashed in file order. */
    const read = async (bytes: number, at: number, into = Buffer.alloc(bytes)): Promise<Buffer> => {
      const buffer = into.subarray(0, bytes);
      const { bytesRead } = await handle!.read(buffer, 0, bytes, at);
      if (bytesRead !== bytes) throw corrupt(`ends at byte ${at + bytesRead}, before its data`);
      hash.update(buffer);
      return buffer;
    };
    const headerLength = Number((await read(lengthBytes, 0)).readBigUInt64LE(0));
    if (lengthBytes + headerLength > size) throw corrupt(`its header of ${headerLength} bytes runs past the file's end`);
    const clients = clientLayout(await read(headerLength, lengthBytes), ref.clients, corrupt);
    let at = lengthBytes + headerLength;
    const sizeOf = (entry: ClientEntry) => entry.tensors.reduce((n, t) => n + 4 * elementCount(t.shape), 0);
    const buffer = Buffer.alloc(Math.max(0, ...clients.map(sizeOf)));
    for (const entry of clients) {
      const bytes = await read(sizeOf(entry), at, buffer);
      at += bytes.length;
      // Copied out of the read buffer into the state's own aligned memory, its tensors views of it.
      const flat = new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length));
      let offset = 0;
      const state: Record<string, HostParam> = {};
      for (const { name, shape } of entry.tensors) state[name] = { shape: [...shape], data: flat.subarray(offset, (offset += elementCount(shape))) };
      store.stage(entry.client, state);
      store.commit();
    }
    if (at !== size) throw corrupt(`${size - at} bytes after the last client's state`);
    if (hash.digest("hex") !== ref.sha256) throw corrupt("SHA-256 checksum mismatch: the file is damaged, or is not the one this checkpoint wrote");
    return store;
  } catch (error) {
    store.close();
    throw error;
  } finally {
    await handle.close();
  }
}

interface ClientEntry {
  readonly client: number;
  readonly tensors: readonly { readonly name: string; readonly shape: readonly number[] }[];
}

/** The clients of a header in data order, each with its tensors; checks that they are contiguous runs as writeClientStates lays them. */
function clientLayout(header: Buffer, expected: number, corrupt: (why: string) => Error): ClientEntry[] {
  let parsed: Record<string, unknown>;
  try {
    parsed = JSON.parse(header.toString("utf8")) as Record<string, unknown>;
  } catch {
    throw corrupt("its header is not valid JSON");
  }
  const { __metadata__: metadata, ...entries } = parsed;
  const meta = (metadata ?? {}) as Record<string, unknown>;
  if (meta.format !== formatName || meta.format_version !== formatVersion) throw corrupt(`not a FedTensor client-state file of format ${formatVersion} (its metadata says ${JSON.stringify(meta)})`);
  type Entry = { dtype?: unknown; shape?: unknown; data_offsets?: unknown };
  const ordered = Object.entries(entries as Record<string, Entry>).sort(([, a], [, b]) => (a.data_offsets as number[])?.[0]! - (b.data_offsets as number[])?.[0]!);
  const clients: { client: number; tensors: { name: string; shape: number[] }[] }[] = [];
  let covered = 0;
  for (const [key, entry] of ordered) {
    const match = /^(\d+)\.(.+)$/.exec(key);
    const shape = entry.shape as number[];
    const [begin, end] = (entry.data_offsets ?? []) as number[];
    const valid = match !== null && entry.dtype === "F32" && Array.isArray(shape) && shape.every((d) => Number.isSafeInteger(d) && d >= 0) && begin === covered && end === begin + 4 * elementCount(shape);
    if (!valid) throw corrupt(`its tensor ${JSON.stringify(key)} is not the next client state tensor (F32, at byte ${covered})`);
    covered = end!;
    const client = Number(match[1]);
    if (clients.at(-1)?.client !== client) clients.push({ client, tensors: [] });
    clients.at(-1)!.tensors.push({ name: match[2]!, shape });
  }
  if (clients.length !== expected) throw corrupt(`it holds ${clients.length} clients' states, the checkpoint ${expected}`);
  return clients;
}
