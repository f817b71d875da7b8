/**
 * `fedtensor run` with a robust aggregator chain (src/lib/aggregators: median, trimmed-mean,
 * krum, norm clipping, attackers, quantized updates): which clients attack, the FT322 check, and
 * the metrics columns these runs add.
 *
 * The median, the trimmed mean and Krum compare the clients with each other (no MapReduce
 * form): their rounds run on the whole cohort in this process, and a run that asks for chunks
 * smaller than the cohort, or for workers (--engine), is FT322 rather than silently holding the
 * whole cohort. The others (the mean, norm-clip, with attackers or quantized updates) stream
 * like FedAvg, in this process or through workers: the attackers are a per-client input, and
 * the quantization keys fold in clientIndex(), which each chunk's runner numbers.
 */
import * as tf from "@tensorflow/tfjs";
import { ftError } from "../../errors/error.js";
import { quantizedBits } from "../../front/quantize.js";
import { hadamardLength } from "../../front/rotation.js";
import { robustKinds } from "../aggregators/stages.js";
import { Rng } from "../random.js";
import { chainKinds } from "./aggregator-chain.js";

/** The options these functions read (a RunConfig is one). */
export interface RobustRunOptions {
  readonly aggregator: string;
  readonly seed: number;
  readonly attack: string;
  readonly byzantine?: number;
  readonly attackScale?: number;
  readonly quantizeBits: number;
  readonly quantizeRotation?: boolean;
  readonly chunkClients: number;
  readonly engine: string;
}

/** Whether a run's chain has a robust stage, an attack or quantization: its metrics rows say so. */
export const isRobustRun = (config: RobustRunOptions): boolean =>
  (chainKinds(config.aggregator) ?? []).some((kind) => robustKinds.has(kind)) || config.attack !== "none" || config.quantizeBits > 0;

/** How many of a cohort of `clients` attack: round(F C), chosen by the seed and the round alone (so a resumed run picks the same). */
export function maliciousClients(config: RobustRunOptions, round: number, cohort: Int32Array): Set<number> {
  if (config.attack === "none") return new Set();
  const count = Math.round((config.byzantine ?? 0) * cohort.length);
  const picked = Rng.fromSeed(config.seed).fork(`byzantine:${round}`).sample(cohort.length, count);
  return new Set(Array.from(picked, (position) => cohort[position]!));
}

/**
 * Bits a client sends per round: quantized (b per entry, two float32 bounds per leaf; a rotated
 * leaf is zero-padded to a power of two) or 32 per entry.
 */
export function bitsPerClient(leafSizes: readonly number[], quantizeBits: number, rotation = false): number {
  if (quantizeBits === 0) return 32 * leafSizes.reduce((a, b) => a + b, 0);
  return quantizedBits(rotation ? leafSizes.map(hadamardLength) : leafSizes, quantizeBits);
}

/** The metrics columns of a robust run's round: its attackers, and the communication of a quantized one. */
export function robustColumns(config: RobustRunOptions, malicious: number, leafSizes: readonly number[]): Record<string, number> {
  const attackers: Record<string, number> = config.attack === "none" ? {} : { byzantine_clients: malicious };
  if (config.quantizeBits === 0) return attackers;
  const bits = bitsPerClient(leafSizes, config.quantizeBits, config.quantizeRotation ?? false);
  return { ...attackers, bits_per_client: bits, compression: bitsPerClient(leafSizes, 0) / bits };
}

/** FT322 unless the round can hold its whole cohort in this process. */
export function requireWholeCohort(config: RobustRunOptions, cohort: number, remote: boolean): void {
  const what = `--aggregator ${config.aggregator}`;
  if (remote) throw ftError("FT322", { what, why: `--engine ${config.engine} gives each worker a chunk of the cohort; run without --engine` });
  if (cohort > config.chunkClients) {
    throw ftError("FT322", { what, why: `--chunk-clients ${config.chunkClients} is smaller than the cohort of ${cohort}; give --chunk-clients ${cohort} or more` });
  }
}

/** The run's seed as randomKey(seed) makes it: the words (floor(seed / 2^32), seed mod 2^32). */
export const seedKey = (seed: number): number[] => [Math.floor(seed / 2 ** 32) | 0, seed % 2 ** 32 | 0];

/** The sizes of a model's parameter leaves, for the bit counts. */
export const leafSizesOf = (params: unknown): number[] =>
  (Array.isArray(params) ? params : Object.values(params as Record<string, unknown>)).flatMap((leaf) => (leaf instanceof tf.Tensor ? [leaf.size] : leafSizesOf(leaf)));
