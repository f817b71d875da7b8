/**
 * The training loop's state (server parameters and state on the device, each client's state
 * in a ClientStateStore) between the device, the host and checkpoints: conversion, the check
 * that a round's new state is finite, and disposal of what a round replaced.
 */
import * as tf from "@tensorflow/tfjs";
import { ftError } from "../../errors/error.js";
import { flatten, leafPaths, unflatten } from "../../front/tree.js";
import type { LoadedCheckpoint, TensorTree } from "./checkpoint.js";
import { isStoredTensor } from "./checkpoint-types.js";
import { ClientStateStore } from "./client-state.js";
import { readClientStates } from "./client-state-file.js";
import type { RunConfig } from "./config.js";
import type { DeviceTree, TrainingState } from "./rounds.js";

const isTensor = (x: unknown): x is tf.Tensor => x instanceof tf.Tensor;

export function toDevice(tree: TensorTree): DeviceTree {
  const { leaves, def } = flatten(tree, isStoredTensor, "server state", "float32 tensors");
  return unflatten(def, leaves.map((t) => tf.tensor(t.data, [...t.shape], "float32"))) as DeviceTree;
}

export async function toHost(tree: DeviceTree): Promise<TensorTree> {
  const { leaves, def } = flatten(tree, isTensor, "server state");
  const data = await Promise.all(leaves.map(async (t) => ({ shape: t.shape, data: (await t.data()) as Float32Array })));
  return unflatten(def, data) as TensorTree;
}

/** FT303 when any leaf of the new state (server or per-client) holds NaN or Infinity, naming the first. */
export async function rejectNonFinite(round: number, state: TrainingState): Promise<void> {
  const device = flatten({ params: state.params, server: state.server }, isTensor, "server state");
  const devicePaths = leafPaths(device.def);
  for (const [i, t] of device.leaves.entries()) {
    const finite = tf.tidy(() => tf.all(tf.isFinite(t)));
    const ok = (await finite.data())[0] === 1;
    finite.dispose();
    if (!ok) throw ftError("FT303", { round, what: `the update of ${devicePaths[i]}` });
  }
  // The round's new client states (staged, not yet the clients'): the others were checked in their rounds.
  for (const [client, kept] of state.clients.staged()) {
    const bad = Object.entries(kept).find(([, t]) => !t.data.every(Number.isFinite));
    if (bad !== undefined) throw ftError("FT303", { round, what: `the state of client ${client}.${bad[0]}` });
  }
}

/** The state as a checkpoint stores it: everything on the host, but the clients' states, which go to its companion file (writeCheckpoint). */
export async function checkpointState(state: TrainingState): Promise<TensorTree> {
  return { params: await toHost(state.params), server: await toHost(state.server) };
}

/** The state a checkpoint holds; its clients' states from its companion file, or from its server state in checkpoints written before there was one. */
export async function restoredState({ checkpoint, path }: LoadedCheckpoint, config: RunConfig): Promise<TrainingState> {
  const { params, server, clients } = checkpoint.serverState as { params: TensorTree; server: TensorTree; clients?: TensorTree };
  const budget = clientStateBudget(config);
  const store = checkpoint.clientStates !== undefined ? await readClientStates(path, checkpoint.clientStates, budget) : clients !== undefined ? ClientStateStore.fromTree(clients, budget) : new ClientStateStore(budget);
  return { params: toDevice(params), server: toDevice(server), clients: store };
}

/** --client-state-memory in bytes. */
export const clientStateBudget = (config: RunConfig): number => config.stateMemory * 2 ** 20;

export const disposeState = (state: TrainingState) => tf.dispose([state.params, state.server] as never);

/** Disposes the tensors of `replaced` that `kept` does not share (an algorithm may carry state over unchanged). */
export function disposeReplaced(replaced: TrainingState, kept: TrainingState): void {
  const keep = new Set(flatten({ p: kept.params, s: kept.server }, isTensor, "state").leaves);
  for (const t of flatten({ p: replaced.params, s: replaced.server }, isTensor, "state").leaves) if (!keep.has(t)) t.dispose();
}
