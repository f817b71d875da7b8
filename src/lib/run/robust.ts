/**
 * `fedtensor run` with a robust aggregator, simulated attackers or quantized updates
 * (src/lib/algorithms/robust-fedavg.ts): the round's inputs that follow from the options,
 * which clients attack, and the metrics columns these runs add.
 *
 * The median, the trimmed mean and Krum compare the clients with each other (no MapReduce
 * form): their rounds run on the whole cohort in this process, and a run that asks for chunks
 * smaller than the cohort, or for workers (--engine), is FT322 rather than silently holding the
 * whole cohort. The others (the mean, norm-clip, with attackers or quantized updates) stream
 * like FedAvg, in this process or through workers: the attackers are a per-client input, and
 * the quantization keys fold in clientIndex(), which each chunk's runner numbers.
 */
import * as tf from "@tensorflow/tfjs";
import type { Tensor as TfTensor } from "@tensorflow/tfjs-core";
import { ftError } from "../../errors/error.js";
import { quantizedBits } from "../../front/quantize.js";
import { robustAggregators as aggregatorNames, robustFedAvgProgram, type Attack, type RobustAggregator } from "../algorithms/robust-fedavg.js";
import type { AnyModel } from "../algorithms/types.js";
import type { RoundSample } from "../data/federated.js";
import type { HostData } from "../data/host-tensor.js";
import { Rng } from "../random.js";
import { cohortData, runOnCohort, type ChunkEngine } from "./cohort.js";
import type { RunConfig } from "./config.js";

/** The options these functions read (a RunConfig is one). */
export interface RobustRunOptions {
  readonly aggregator: string;
  readonly algorithm: string;
  readonly seed: number;
  readonly attack: string;
  readonly byzantine?: number;
  readonly attackScale?: number;
  readonly quantizeBits: number;
  readonly chunkClients: number;
  readonly engine: string;
}

const robustAggregators: ReadonlySet<string> = new Set(aggregatorNames);

/** Whether a run goes through the robust round: a robust aggregator, attackers or quantization. */
export const isRobustRun = (config: RobustRunOptions): boolean => robustAggregators.has(config.aggregator) || config.attack !== "none" || config.quantizeBits > 0;

/** How many of a cohort of `clients` attack: round(F C), chosen by the seed and the round alone (so a resumed run picks the same). */
export function maliciousClients(config: RobustRunOptions, round: number, cohort: Int32Array): Set<number> {
  if (config.attack === "none") return new Set();
  const count = Math.round((config.byzantine ?? 0) * cohort.length);
  const picked = Rng.fromSeed(config.seed).fork(`byzantine:${round}`).sample(cohort.length, count);
  return new Set(Array.from(picked, (position) => cohort[position]!));
}

/** Bits a client sends per round: quantized (b per entry, two float32 bounds per leaf) or 32 per entry. */
export function bitsPerClient(leafSizes: readonly number[], quantizeBits: number): number {
  return quantizeBits > 0 ? quantizedBits(leafSizes, quantizeBits) : 32 * leafSizes.reduce((a, b) => a + b, 0);
}

/** The metrics columns of a robust run's round: its attackers, and the communication of a quantized one. */
export function robustColumns(config: RobustRunOptions, malicious: number, leafSizes: readonly number[]): Record<string, number> {
  const attackers: Record<string, number> = config.attack === "none" ? {} : { byzantine_clients: malicious };
  if (config.quantizeBits === 0) return attackers;
  const bits = bitsPerClient(leafSizes, config.quantizeBits);
  return { ...attackers, bits_per_client: bits, compression: bitsPerClient(leafSizes, 0) / bits };
}

/** The aggregators that compare clients with each other: they have no MapReduce form. */
const wholeCohortAggregators: ReadonlySet<string> = new Set(["median", "trimmed-mean", "krum"]);

/** FT322 unless the round can hold its whole cohort in this process. */
function requireWholeCohort(config: RobustRunOptions, cohort: number, remote: boolean): void {
  const what = `--aggregator ${config.aggregator}`;
  if (remote) throw ftError("FT322", { what, why: `--engine ${config.engine} gives each worker a chunk of the cohort; run without --engine` });
  if (cohort > config.chunkClients) {
    throw ftError("FT322", { what, why: `--chunk-clients ${config.chunkClients} is smaller than the cohort of ${cohort}; give --chunk-clients ${cohort} or more` });
  }
}

/** The run's seed as randomKey(seed) makes it: the words (floor(seed / 2^32), seed mod 2^32). */
export const seedKey = (seed: number): number[] => [Math.floor(seed / 2 ** 32) | 0, seed % 2 ** 32 | 0];

type ProgramRun = { run(inputs: never, options: never): Promise<unknown> };

/** The round program and a function that runs one round of it on a cohort. */
export function robustRound(model: AnyModel, config: RunConfig, clientOptimizer: object) {
  const program = robustFedAvgProgram(model, {
    aggregator: config.aggregator as RobustAggregator,
    ...(config.trimFraction === undefined ? {} : { trim: config.trimFraction }),
    ...(config.krumByzantine === undefined ? {} : { krumByzantine: config.krumByzantine }),
    ...(config.krumSelect === undefined ? {} : { krumSelect: config.krumSelect }),
    ...(config.normBound === undefined ? {} : { normBound: config.normBound }),
    ...(config.attack === "none" ? {} : { attack: config.attack as Attack }),
    ...(config.quantizeBits === 0 ? {} : { quantizeBits: config.quantizeBits }),
    ...clientOptimizer,
  });
  const key = seedKey(config.seed);
  return {
    program,
    async run(params: unknown, cohort: RoundSample<HostData>, cfg: RunConfig, round: number, engine?: ChunkEngine): Promise<{ params: unknown; loss: TfTensor }> {
      const attackers = maliciousClients(cfg, round, cohort.clients);
      const malicious = Float32Array.from(cohort.clients, (client) => (attackers.has(client) ? 1 : 0));
      const server = { params, lr: cfg.lr, attackScale: cfg.attackScale ?? 1, key, round };
      if (!wholeCohortAggregators.has(cfg.aggregator)) {
        const settings = { chunkClients: cfg.chunkClients, options: { backend: cfg.backend }, perClient: { malicious }, ...(engine === undefined ? {} : { engine }) };
        return (await runOnCohort(program as never, server, cohort, settings)) as { params: unknown; loss: TfTensor };
      }
      requireWholeCohort(cfg, cohort.clients.length, engine !== undefined);
      const inputs = { ...server, ...cohortData(cohort.batch(cohort.clients)), malicious: { shape: [malicious.length], data: malicious } };
      return (await (program as unknown as ProgramRun).run(inputs as never, { backend: cfg.backend } as never)) as { params: unknown; loss: TfTensor };
    },
  };
}

/** The sizes of a model's parameter leaves, for the bit counts. */
export const leafSizesOf = (params: unknown): number[] =>
  (Array.isArray(params) ? params : Object.values(params as Record<string, unknown>)).flatMap((leaf) => (leaf instanceof tf.Tensor ? [leaf.size] : leafSizesOf(leaf)));
