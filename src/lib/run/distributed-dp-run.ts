/**
 * `fedtensor run --aggregator distributed-dp`: FedAvg whose updates reach the server through
 * distributedDpSum (src/lib/algorithms/distributed-dp-fedavg.ts), in one process. The noise is
 * calibrated for --min-clients survivors (a round with fewer is skipped, as a SecAgg+ round
 * below its threshold aborts) and the sum's modulus holds --clients-per-round clients. Each
 * round's rotation key and each client's key come from the run's secret, never --seed.
 *
 * Accounting (src/lib/privacy/distributed-dp.ts): every round is a full release of the
 * cohort's sum, with no amplification by sampling (the server of distributed DP sees who takes
 * part), for the neighbouring relation in which one participant's update is replaced by zeros.
 */
import type { ProgramIR } from "../../ir/types.js";
import { hadamardLength } from "../../front/rotation.js";
import { distributedDpFedAvgProgram, type DistributedDpOptions } from "../algorithms/distributed-dp-fedavg.js";
import type { AnyModel } from "../algorithms/types.js";
import { calibrateDistributedDp, distributedDpEpsilon, noiseMultiplierForEpsilon } from "../privacy/distributed-dp.js";
import type { RunSecret } from "../privacy/secret.js";
import { runOnCohort, type ChunkEngine } from "./cohort.js";
import type { RunConfig } from "./config.js";
import { clientTraining } from "./optimizers.js";
import type { RoundSample } from "../data/federated.js";
import type { HostData } from "../data/host-tensor.js";

/**
 * The mechanism's options from a run's config, for a model of `parameters` parameters: with
 * --ddp-target-epsilon, the noise multiplier that spends it in --rounds rounds.
 */
export function distributedDpOptionsOf(config: RunConfig, parameters: number): DistributedDpOptions {
  const base = { clip: config.ddpClip ?? 1, bits: config.ddpBits ?? 16, minClients: config.minClients, maxClients: config.clientsPerRound };
  const target = config.ddpTargetEpsilon ?? 0;
  const noiseMultiplier = target > 0 ? noiseMultiplierForEpsilon({ ...base, dimension: hadamardLength(parameters) }, target, config.rounds, config.ddpDelta ?? 1e-5) : (config.ddpNoise ?? 1);
  return { ...base, noiseMultiplier };
}

/** Epsilon at --ddp-delta after `rounds` rounds of a model with `parameters` parameters. */
export function distributedDpEpsilonAfter(config: RunConfig, rounds: number, parameters: number): number {
  const cal = calibrateDistributedDp({ ...distributedDpOptionsOf(config, parameters), dimension: hadamardLength(parameters) });
  return distributedDpEpsilon(cal, rounds, config.ddpDelta ?? 1e-5).epsilon;
}

/** A round's metrics column: the epsilon after it (null when there is no finite one). */
export function distributedDpColumns(config: RunConfig, round: number, parameters: number): { epsilon: number | null } {
  const epsilon = distributedDpEpsilonAfter(config, round, parameters);
  return { epsilon: Number.isFinite(epsilon) ? epsilon : null };
}

/** The number of parameters of a tree of parameter specs. */
const parameterCount = (specs: unknown): number => {
  const shape = (specs as { shape?: unknown }).shape;
  if (Array.isArray(shape)) return (shape as number[]).reduce((a, b) => a * b, 1);
  return Object.values(specs as object).reduce((n: number, spec) => n + parameterCount(spec), 0);
};

/**
 * The round runner (rounds.ts's RoundRunner, typed structurally here: rounds.ts imports this
 * file) of the run: no server state besides the model, no loss.
 */
export function distributedDpRunner(model: AnyModel, config: RunConfig, secret: RunSecret) {
  const options = distributedDpOptionsOf(config, parameterCount(model.params));
  const program = distributedDpFedAvgProgram(model, { ...clientTraining(config), ...options });
  const key = secret.key("distributed-dp");
  return {
    initialServerState: () => ({}),
    async round<S extends { readonly params: unknown }>(state: S, cohort: RoundSample<HostData>, cfg: RunConfig, { round, engine }: { readonly round: number; readonly engine?: ChunkEngine }): Promise<{ state: S; loss: undefined }> {
      // Each client's own noise randomness: derived from the run's secret in this process; with
      // --engine each worker draws its clients' keys from its own CSPRNG (they are in no job).
      const clientKeys = { shape: [cohort.clients.length, 2], data: Int32Array.from([...cohort.clients].flatMap((c) => secret.clientKey(round, c))), drawnByWorker: true };
      const out = (await runOnCohort(program as unknown as { ir: ProgramIR; run(inputs: never, options: never): Promise<unknown> }, { params: state.params, lr: cfg.lr, key, round }, cohort, {
        chunkClients: cfg.chunkClients,
        options: { backend: cfg.backend },
        perClient: { clientKeys },
        // On workers, each chunk's sum (all that Redis and the coordinator see of it) holds the
        // calibrated noise. In this process no one sees a chunk's sum but the process that holds the keys.
        ...(engine === undefined ? {} : { engine, groupMin: options.minClients }),
      })) as { params: S["params"] };
      // No loss: the clients' losses are private and reach the server through no release.
      return { state: { ...state, params: out.params }, loss: undefined };
    },
  };
}
