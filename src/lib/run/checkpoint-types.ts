/**
 * What a checkpoint holds, apart from checkpoint.ts (files and folders) and the formats that
 * encode it (checkpoint-format.ts, legacy-checkpoint.ts), so that those import this module
 * rather than each other.
 */
export type JsonValue = null | boolean | number | string | readonly JsonValue[] | { readonly [key: string]: JsonValue };

export interface StoredTensor {
  readonly shape: readonly number[];
  readonly data: Float32Array;
}

/** Whether a tree leaf is a stored tensor: float32 data on the host. */
export const isStoredTensor = (x: unknown): x is StoredTensor =>
  typeof x === "object" && x !== null && (x as { data?: unknown }).data instanceof Float32Array;

export type TensorTree = StoredTensor | readonly TensorTree[] | { readonly [name: string]: TensorTree };

export interface Checkpoint {
  readonly round: number;
  readonly serverState: TensorTree;
  /** Whatever the run's random generator needs to continue its sequence. */
  readonly rngState: JsonValue;
  readonly config: JsonValue;
  /**
   * The metrics row of the checkpoint's round as metrics.jsonl holds it, so that --resume can
   * tell this run's checkpoint from another run's under the same name (checkpoint-match.ts);
   * absent for round 0, library checkpoints and files of the first format.
   */
  readonly metricsRow?: JsonValue;
  /** The companion file of the clients' states (client-state-file.ts); absent when no client keeps one. */
  readonly clientStates?: ClientStatesRef;
}

/** What a checkpoint says of its companion file of client states: its name beside the checkpoint, and what it holds. */
export interface ClientStatesRef {
  readonly file: string;
  readonly clients: number;
  readonly bytes: number;
  /** The SHA-256 of the whole file (hex). */
  readonly sha256: string;
}
