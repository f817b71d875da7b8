/**
 * A served client's own state between rounds (FedPer's heads, Ditto's personal model,
 * SCAFFOLD's control): what its part reads at its state inputs and writes at their outputs
 * (the part message's `state`). It stays on the client: the Node client keeps it in a file of
 * its own (state-file.ts), a browser tab in IndexedDB (page/state-idb.ts), by run and client id.
 *
 * A round's new state is pending until the server says the round merged (round-end), and the
 * state of the round before is kept beside it: a server killed and resumed from the checkpoint
 * of round r sends round r+1 again, and each client then trains from the state it had after
 * round r (the newest kept state of a round before the task's), as a run without the kill does.
 */
import { ftError } from "../../errors/error.js";
import { decodeRecord, encodeRecord, RecordError, type RecordTensor, type RecordValue } from "../protocol/record.js";

/** One round's state: the part's state inputs' values, by input name. */
export interface SavedState {
  readonly round: number;
  readonly tensors: ReadonlyMap<string, RecordTensor>;
}

/** Where a client keeps its saved states (at most two, oldest first) as one record's bytes, by run and client. */
export interface ClientStateStorage {
  /** The bytes written last for (run, client); undefined when none were. */
  read(run: string, client: string): Promise<Uint8Array | undefined>;
  /** Replaces them, whole or not at all. */
  write(run: string, client: string, bytes: Uint8Array): Promise<void>;
  /** Where they are, for the client's log. */
  describe(run: string, client: string): string;
}

/** A storage for this process's life only (a client that keeps nothing across restarts; tests). */
export class MemoryStateStorage implements ClientStateStorage {
  private readonly held = new Map<string, Uint8Array>();
  async read(run: string, client: string): Promise<Uint8Array | undefined> {
    return this.held.get(`${run}/${client}`);
  }
  async write(run: string, client: string, bytes: Uint8Array): Promise<void> {
    this.held.set(`${run}/${client}`, Uint8Array.from(bytes));
  }
  describe(): string {
    return "memory";
  }
}

/** The states as one record: `<k>:round` and `<k>:<input>` for the k-th state, oldest first. */
export function encodeStates(states: readonly SavedState[]): Uint8Array {
  const entries = states.flatMap((s, k): [string, RecordValue][] => [[`${k}:round`, s.round], ...[...s.tensors].map(([name, t]): [string, RecordValue] => [`${k}:${name}`, t])]);
  return encodeRecord(new Map(entries));
}

/** encodeStates' inverse; FT366 when the bytes are not such a record (`where` names them). */
export function decodeStates(bytes: Uint8Array, where: string): SavedState[] {
  let values;
  try {
    values = decodeRecord(bytes);
  } catch (error) {
    if (error instanceof RecordError) throw ftError("FT366", { where, why: error.message });
    throw error;
  }
  const states: { round: number; tensors: Map<string, RecordTensor> }[] = [];
  for (const [name, value] of values) {
    const match = /^(\d+):(.+)$/.exec(name);
    if (match === null) throw ftError("FT366", { where, why: `an entry ${name} that is no state's` });
    const state = (states[Number(match[1])] ??= { round: Number.NaN, tensors: new Map() });
    if (match[2] === "round" && typeof value === "number") state.round = value;
    else if (typeof value !== "number" && value.dtype === "float32") state.tensors.set(match[2]!, value);
    else throw ftError("FT366", { where, why: `entry ${name} is neither a round number nor a float32 tensor` });
  }
  // Round 0 is a state put there before the run (a head trained elsewhere): round 1 starts from it.
  if (states.some((s) => s === undefined || !Number.isSafeInteger(s.round) || s.round < 0)) throw ftError("FT366", { where, why: "a state without the round it was written for" });
  return states;
}

/** One client's state in one run: read before a task, staged after it, written when the round merges. */
export class ClientStateKeeper {
  private saved: SavedState[] | undefined;
  private pending: SavedState | undefined;

  constructor(
    private readonly storage: ClientStateStorage,
    private readonly run: string,
    private readonly client: string,
  ) {}

  /** Where the state is kept, for the log. */
  get where(): string {
    return this.storage.describe(this.run, this.client);
  }

  /** The newest state of a round before `round` (what the task of `round` starts from); undefined for a client without one. */
  async before(round: number): Promise<SavedState | undefined> {
    this.saved ??= await this.load();
    return this.saved.filter((s) => s.round < round).at(-1);
  }

  /** The state the task of `round` wrote: kept once the round merges. */
  stage(round: number, tensors: ReadonlyMap<string, RecordTensor>): void {
    this.pending = { round, tensors };
  }

  /** Round `round` merged: its staged state is written, beside the newest state of a round before it. */
  async commit(round: number): Promise<boolean> {
    const pending = this.pending;
    if (pending === undefined || pending.round !== round) return false;
    const previous = await this.before(round);
    const states = previous === undefined ? [pending] : [previous, pending];
    await this.storage.write(this.run, this.client, encodeStates(states));
    this.saved = states;
    this.pending = undefined;
    return true;
  }

  private async load(): Promise<SavedState[]> {
    const bytes = await this.storage.read(this.run, this.client);
    return bytes === undefined ? [] : decodeStates(bytes, this.where);
  }
}
