/**
 * The clients' state between rounds in `fedtensor run` (docs/language.md "Client state"):
 * each client's kept outputs (FedPer's heads, Ditto's personal models, SCAFFOLD's controls),
 * by client id, on the host.
 *
 * Memory is bounded: states live in memory, least recently used first out, up to a byte
 * budget (--state-memory); past it they spill to a private temporary folder (mode
 * 0700, one file of raw float32 per client, removed when the run ends), so a cohort of 10,000
 * clients costs the budget and the disk, not 10,000 states of memory (bench/client-state-memory.ts).
 * Nothing of it goes to --out except through the checkpoints, whose companion files hold every
 * client's state (client-state-file.ts) so that a resumed run continues bit for bit.
 *
 * A round's new states are pending until the round is accepted (commit): a round that fails
 * (FT303, a non-finite update) leaves every client's state as the last good round left it.
 */
import { closeSync, mkdtempSync, openSync, readFileSync, readSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ftError } from "../../errors/error.js";
import { elementCount } from "../data/host-tensor.js";
import type { HostParam } from "../models/model.js";
import { isStoredTensor, type TensorTree } from "./checkpoint-types.js";

/** One client's state: named float32 tensors (the kept outputs' leaves). */
export type ClientState = { readonly [name: string]: HostParam };

/** The default memory budget of the states: 256 MiB. */
export const defaultClientStateBytes = 256 * 2 ** 20;

interface Layout {
  readonly names: readonly string[];
  readonly shapes: readonly (readonly number[])[];
  readonly sizes: readonly number[];
}

export class ClientStateStore {
  /** States in memory, least recently used first (a Map keeps insertion order). */
  private readonly memory = new Map<number, ClientState>();
  private readonly spilled = new Set<number>();
  private readonly pending = new Map<number, ClientState>();
  private layout: Layout | undefined;
  private spillDir: string | undefined;
  private inMemory = 0;
  /** The most bytes of state this store held in memory at once. */
  peakBytes = 0;

  constructor(readonly budgetBytes: number = defaultClientStateBytes) {
    if (!(budgetBytes >= 0)) throw ftError("FT365", { why: `the memory budget must be >= 0 bytes, got ${budgetBytes}` });
  }

  /** How many clients have a state. */
  get size(): number {
    return this.memory.size + this.spilled.size;
  }

  /** How many states are on disk now. */
  get spilledCount(): number {
    return this.spilled.size;
  }

  has(client: number): boolean {
    return this.memory.has(client) || this.spilled.has(client);
  }

  /**
   * The client's state as the last accepted round left it; undefined for a client never seen.
   * A spilled state is read from disk and stays there: the round stages the client's new one,
   * which takes its place in memory when committed, so reading a cohort writes nothing.
   */
  get(client: number): ClientState | undefined {
    const held = this.memory.get(client);
    if (held !== undefined) {
      this.memory.delete(client);
      this.memory.set(client, held);
      return held;
    }
    return this.spilled.has(client) ? this.readSpilled(client) : undefined;
  }

  /** Sets the client's state for the round under way: it counts once the round is committed. */
  stage(client: number, state: ClientState): void {
    this.checkLayout(client, state);
    this.pending.set(client, state);
  }

  /** The states the round under way has set, by client. */
  staged(): ReadonlyMap<number, ClientState> {
    return this.pending;
  }

  /** The round was accepted: its states replace the clients' old ones. */
  commit(): void {
    for (const [client, state] of this.pending) {
      this.forget(client);
      this.keep(client, state);
    }
    this.pending.clear();
  }

  /** The round failed: its states are dropped. */
  discard(): void {
    this.pending.clear();
  }

  /** The clients with an accepted state, in id order. */
  clients(): number[] {
    return [...this.memory.keys(), ...this.spilled].sort((a, b) => a - b);
  }

  /** The tensors' names (sorted) and shapes of every client's state; undefined before the first. */
  get stateLayout(): { readonly names: readonly string[]; readonly shapes: readonly (readonly number[])[] } | undefined {
    return this.layout;
  }

  /** The bytes of one client's state: every client's is as large. */
  get stateBytes(): number {
    return this.layout === undefined ? 0 : this.bytesOf();
  }

  /**
   * Writes the client's accepted state into `target` (stateBytes long) as its float32 bytes, the
   * tensors in layout order: what a checkpoint streams to its file, one client at a time into one
   * buffer. A spilled state's file is that already, read as it is; the memory order is left alone.
   */
  copyBytes(client: number, target: Uint8Array): void {
    const held = this.memory.get(client);
    if (held === undefined) {
      const fd = openSync(join(this.spillDir!, `${client}.f32`), "r");
      try {
        if (readSync(fd, target, 0, target.length, 0) !== target.length) throw new Error(`client ${client}'s spilled state is shorter than ${target.length} bytes`);
      } finally {
        closeSync(fd);
      }
      return;
    }
    let offset = 0;
    for (const name of this.layout!.names) {
      const { data } = held[name]!;
      target.set(new Uint8Array(data.buffer, data.byteOffset, data.byteLength), offset);
      offset += data.byteLength;
    }
  }

  /** A store holding the client states of a checkpoint of the first layout, inside its server state: `{ [client]: { [name]: tensor } }`. */
  static fromTree(tree: TensorTree, budgetBytes?: number): ClientStateStore {
    const store = new ClientStateStore(budgetBytes);
    for (const [client, state] of Object.entries(tree as Record<string, Record<string, TensorTree>>)) {
      const id = Number(client);
      const leaves = Object.entries(state);
      if (!Number.isSafeInteger(id) || id < 0 || !leaves.every(([, t]) => isStoredTensor(t))) {
        throw ftError("FT365", { why: `the checkpoint's client state ${client} is not one client's named float32 tensors` });
      }
      store.stage(id, state as ClientState);
    }
    store.commit();
    return store;
  }

  /** Removes the spill folder; the store is empty afterwards. */
  close(): void {
    if (this.spillDir !== undefined) rmSync(this.spillDir, { recursive: true, force: true });
    this.spillDir = undefined;
    this.memory.clear();
    this.spilled.clear();
    this.pending.clear();
    this.inMemory = 0;
  }

  private keep(client: number, state: ClientState): void {
    this.memory.set(client, state);
    this.inMemory += this.bytesOf();
    this.peakBytes = Math.max(this.peakBytes, this.inMemory);
    while (this.inMemory > this.budgetBytes && this.memory.size > 0) {
      const [oldest, evicted] = this.memory.entries().next().value as [number, ClientState];
      this.spill(oldest, evicted);
    }
  }

  private forget(client: number): void {
    if (this.memory.delete(client)) this.inMemory -= this.bytesOf();
    this.spilled.delete(client);
  }

  private spill(client: number, state: ClientState): void {
    this.memory.delete(client);
    this.inMemory -= this.bytesOf();
    const layout = this.layout!;
    const flat = new Float32Array(layout.sizes.reduce((a, b) => a + b, 0));
    let offset = 0;
    layout.names.forEach((name, i) => {
      flat.set(state[name]!.data, offset);
      offset += layout.sizes[i]!;
    });
    this.spillDir ??= mkdtempSync(join(tmpdir(), "fedtensor-client-state-"));
    writeFileSync(join(this.spillDir, `${client}.f32`), new Uint8Array(flat.buffer), { mode: 0o600 });
    this.spilled.add(client);
  }

  private readSpilled(client: number): ClientState {
    const layout = this.layout!;
    const bytes = readFileSync(join(this.spillDir!, `${client}.f32`));
    const flat = new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength));
    const state: Record<string, HostParam> = {};
    let offset = 0;
    layout.names.forEach((name, i) => {
      state[name] = { shape: [...layout.shapes[i]!], data: flat.slice(offset, offset + layout.sizes[i]!) };
      offset += layout.sizes[i]!;
    });
    return state;
  }

  /** Bytes of one state in memory: every client's has the layout of the first. */
  private bytesOf(): number {
    return 4 * this.layout!.sizes.reduce((a, b) => a + b, 0);
  }

  /** FT365 unless the state has the names and shapes of every other client's. */
  private checkLayout(client: number, state: ClientState): void {
    const names = Object.keys(state).sort();
    const shapes = names.map((name) => state[name]!.shape);
    names.forEach((name, i) => {
      if (state[name]!.data.length !== elementCount(shapes[i]!)) throw ftError("FT365", { why: `client ${client}'s state ${name} has ${state[name]!.data.length} values for shape [${shapes[i]!.join(",")}]` });
    });
    if (this.layout === undefined) {
      this.layout = { names, shapes, sizes: shapes.map(elementCount) };
      return;
    }
    const same = this.layout.names.length === names.length && names.every((name, i) => name === this.layout!.names[i] && shapes[i]!.join(",") === this.layout!.shapes[i]!.join(","));
    if (!same) throw ftError("FT365", { why: `client ${client}'s state has the tensors ${describe(names, shapes)}, the other clients' ${describe(this.layout.names, this.layout.shapes)}` });
  }
}

const describe = (names: readonly string[], shapes: readonly (readonly number[])[]): string => names.map((name, i) => `${name}[${shapes[i]!.join(",")}]`).join(", ");

/**
 * The cohort's states stacked as CLIENTS host tensors [C, ...], in the cohort's order: what
 * the program reads at its state input. A client never seen starts from `initial`.
 */
export function stackedStates(store: ClientStateStore, cohort: ArrayLike<number>, initial: ClientState): Record<string, HostParam> {
  const stacked: Record<string, HostParam> = {};
  for (const [name, { shape, data }] of Object.entries(initial)) {
    const out = new Float32Array(cohort.length * data.length);
    Array.from(cohort, (client, i) => out.set((store.get(client) ?? initial)[name]!.data, i * data.length));
    stacked[name] = { shape: [cohort.length, ...shape], data: out };
  }
  return stacked;
}

/** A program's kept output, a record of tensors [C, ...], staged as each cohort client's new state (row i is client cohort[i]'s). */
export async function stageOutputs(store: ClientStateStore, cohort: ArrayLike<number>, kept: Record<string, { readonly shape: readonly number[]; data(): Promise<unknown> }>): Promise<void> {
  const rows: Record<number, Record<string, HostParam>> = {};
  for (const [name, t] of Object.entries(kept)) {
    const data = (await t.data()) as Float32Array;
    const [, ...shape] = t.shape;
    const size = data.length / cohort.length;
    Array.from(cohort, (client, i) => ((rows[client] ??= {})[name] = { shape, data: data.slice(i * size, (i + 1) * size) }));
  }
  for (const client of Array.from(cohort)) store.stage(client, rows[client] ?? {});
}

/** The named tensors of a device tree (the server's parameters) on the host: the state a client never seen starts from. */
export async function hostStateOf(tree: Record<string, { readonly shape: readonly number[]; data(): Promise<unknown> }>, names: readonly string[] = Object.keys(tree)): Promise<ClientState> {
  const entries = await Promise.all(names.map(async (name): Promise<[string, HostParam]> => [name, { shape: [...tree[name]!.shape], data: Float32Array.from((await tree[name]!.data()) as Float32Array) }]));
  return Object.fromEntries(entries);
}
