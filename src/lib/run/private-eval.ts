/**
 * Federated and personalization evaluation in a private run (--aggregator with dp or secure,
 * and --client-holdout, --personalize-epochs): the clients' accuracies stay on the clients, and
 * the server learns histograms of them (src/lib/algorithms/private-evaluation.ts): DP ones in a
 * dp run, whose cost the run's epsilon includes (src/lib/run/privacy.ts evaluationReleases);
 * in a distributed-dp run ones noised by the clients themselves under a secure sum, priced by
 * distributed DP's accountant (src/lib/run/distributed-dp-run.ts evaluationReleasesOf); exact
 * counts through secure aggregation in a secure run. The evaluated clients go in chunks as in
 * federated-eval.ts (secure groups of at least 2 with secure, of at least --min-clients, the
 * smallest of whose sizes the noise is calibrated for, with distributed-dp), each chunk its own release over its
 * own clients, the chunks' histograms summed.
 *
 * No per-client file is written: client-metrics.csv, client-confusion.csv and
 * personalization.csv are a public run's. What the metrics columns and personalization.json
 * hold is read off the released histograms: the estimated number of clients, their mean
 * accuracy (bin centres) and percentiles (linear within a bin), null where the histogram says
 * nothing (the example-weighted mean, top-k accuracy, loss).
 */
import type * as tf from "@tensorflow/tfjs";
import { accuracyBins, privateEvaluationProgram, privatePersonalizationProgram, type HistogramMechanism } from "../algorithms/private-evaluation.js";
import { ftError } from "../../errors/error.js";
import { batchCohort } from "../data/federated.js";
import type { RunSecret } from "../privacy/secret.js";
import { distributionStats } from "./client-distribution.js";
import { bucketSteps, cohortChunks, secureGroups } from "./cohort.js";
import { isDpRun } from "./privacy.js";
import { chainHas } from "./aggregator-chain.js";
import { evaluationReleaseOptions } from "./distributed-dp-run.js";
import type { RunConfig } from "./config.js";
import { roundBatchSize } from "./data-limits.js";
import { evaluationFiles } from "./evaluation-files.js";
import { writeRunFile, type FederatedEvaluator } from "./federated-eval.js";
import { clientTraining } from "./optimizers.js";
import { runOptionsOf, type DeviceTree } from "./rounds.js";
import { withFeatureShape } from "./setup.js";

/** What a released histogram tells: the clients it counts, and their accuracy's mean and percentiles. */
export interface HistogramEstimate {
  readonly histogram: readonly number[];
  readonly clients: number;
  readonly mean: number;
  readonly p10: number;
  readonly p50: number;
  readonly p90: number;
}

/** The estimate read off a noised histogram of `accuracyBins` equal bins of [0, 1]: negative counts taken as 0. */
export function histogramEstimate(histogram: ArrayLike<number>): HistogramEstimate {
  const counts = Array.from(histogram, (n) => Math.max(0, n));
  const clients = counts.reduce((a, b) => a + b, 0);
  const width = 1 / counts.length;
  const mean = counts.reduce((sum, n, b) => sum + n * (b + 0.5) * width, 0) / clients;
  const quantile = (p: number): number => {
    let below = 0;
    for (const [b, n] of counts.entries()) {
      if (n > 0 && below + n >= p * clients) return (b + (p * clients - below) / n) * width;
      below += n;
    }
    return 1;
  };
  return { histogram: Array.from(histogram), clients, mean, p10: quantile(0.1), p50: quantile(0.5), p90: quantile(0.9) };
}

export class PrivateEvaluator {
  private readonly evaluation;
  private readonly mechanism: HistogramMechanism;

  /** Evaluates the held-out clients of `clients` (its model, data, config and random stream), releasing only histograms. */
  constructor(
    private readonly clients: FederatedEvaluator,
    private readonly secret: RunSecret,
  ) {
    const { config } = clients;
    this.mechanism = isDpRun(config) ? "dp" : chainHas(config.aggregator, "distributed-dp") ? { kind: "distributed-dp", options: evaluationReleaseOptions(config) } : "secure";
    this.evaluation = privateEvaluationProgram(clients.model, this.mechanism);
  }

  /** The metrics columns of a round (FederatedEvaluator.columns' names), from the estimate; null where not evaluated or not known. */
  static columns(config: RunConfig, estimate: HistogramEstimate | undefined): Record<string, number | null> {
    const known: Record<string, number | undefined> = { mean: estimate?.mean, p10: estimate?.p10, p50: estimate?.p50, p90: estimate?.p90 };
    const accuracy = Object.fromEntries(distributionStats.map((s) => [`client_accuracy_${s}`, known[s] ?? null]));
    const topK = config.topK > 1 ? Object.fromEntries(distributionStats.map((s) => [`client_top${config.topK}_accuracy_${s}`, null])) : {};
    return { clients_evaluated: estimate === undefined ? null : Math.round(estimate.clients), ...accuracy, ...topK, client_loss_mean: null, client_loss_weighted: null };
  }

  /** The released histogram of the evaluated clients' held-out accuracies under `params` after `round`. */
  async evaluate(params: DeviceTree, round: number): Promise<HistogramEstimate> {
    const key = this.secret.roundKey("evaluation", round);
    const total = new Float64Array(accuracyBins);
    for (const [part, chunk] of this.chunks(round, this.clients.heldOutSteps).entries()) {
      const inputs = { params, ...this.clients.heldOutInputs(chunk.clients, chunk.steps), ...this.releaseInputs(key, part, chunk.clients, round, "evaluation") };
      const out = (await this.evaluation.run(inputs as never, runOptionsOf(this.clients.config))) as unknown as { histogram: tf.Tensor };
      (await out.histogram.data()).forEach((n, b) => (total[b]! += n));
      out.histogram.dispose();
    }
    return histogramEstimate(total);
  }

  /** Personalization after `round`, the last: the released histograms before and after fine-tuning; writes personalization.json (no per-client file). */
  async personalize(params: DeviceTree, round: number): Promise<{ before: HistogramEstimate; after: HistogramEstimate }> {
    const program = privatePersonalizationProgram(this.clients.model, clientTraining(this.clients.config), this.mechanism);
    const epochs = this.clients.config.personalizeEpochs;
    const batchSize = roundBatchSize(this.clients.config, this.clients.data);
    const trainSteps = (client: number) => Math.max(1, Math.ceil((epochs * this.clients.data.clientIndices[client]!.length) / batchSize));
    const key = this.secret.roundKey("personalization", round);
    const [before, after] = [new Float64Array(accuracyBins), new Float64Array(accuracyBins)];
    for (const [part, chunk] of this.chunks(round, trainSteps).entries()) {
      const train = batchCohort(this.clients.data, chunk.clients, { batchSize, epochs, rng: this.clients.rng.fork("personalize"), steps: chunk.steps });
      const inputs = { params, lr: this.clients.config.lr, trainX: withFeatureShape(train.x, 3, this.clients.featureShape), trainY: train.y, trainMask: train.mask, ...this.clients.heldOutInputs(chunk.clients), ...this.releaseInputs(key, part, chunk.clients, round, "personalization") };
      const out = (await program.run(inputs as never, runOptionsOf(this.clients.config))) as unknown as { before: tf.Tensor; after: tf.Tensor };
      (await out.before.data()).forEach((n, b) => (before[b]! += n));
      (await out.after.data()).forEach((n, b) => (after[b]! += n));
      disposeAll(out.before, out.after);
    }
    const results = { before: histogramEstimate(before), after: histogramEstimate(after) };
    const released =
      this.mechanism === "dp"
        ? { released: "DP histograms of the clients' held-out accuracies", noiseMultiplier: this.clients.config.evalNoise }
        : this.mechanism === "secure"
          ? { released: "exact histograms of the clients' held-out accuracies through secure aggregation (simulated in one process)" }
          : { released: "distributed-DP histograms of the clients' held-out accuracies (each client's own discrete Gaussian noise, summed securely)", noiseMultiplier: this.clients.config.evalNoise };
    const summary = { epochs, lr: this.clients.config.lr, ...released, bins: accuracyBins, ...results };
    await writeRunFile(this.clients.config.out, evaluationFiles.personalizationSummary, `${JSON.stringify(summary, null, 2)}\n`);
    return results;
  }

  /** The evaluated clients after `round` in chunks: secure groups of at least 2 under secure aggregation, of at least the calibration's minClients under distributed DP. */
  private chunks(round: number, stepsOf: (client: number) => number) {
    const clients = this.clients.clientsAt(round);
    const { chunkClients } = this.clients.config;
    if (this.mechanism === "secure") return secureGroups(clients, stepsOf, chunkClients, 2);
    if (this.mechanism === "dp") return cohortChunks(clients, stepsOf, chunkClients);
    // Groups of at least --min-clients, as evaluationReleaseOptions counts them: none smaller than the calibration's minClients.
    // Cut in the evaluated clients' public order, not by their steps: who shares a group with whom tells nothing of a client's held-out data.
    const calibrated = this.mechanism.options.minClients;
    const ordered = secureGroups(clients, () => 1, chunkClients, Math.min(this.clients.config.minClients, clients.length));
    const groups = ordered.map((g) => ({ clients: g.clients, steps: bucketSteps(Math.max(...Array.from(g.clients, stepsOf))) }));
    const small = groups.find((g) => g.clients.length < calibrated);
    if (small !== undefined) throw ftError("FT112", { op: "distributedDpSum", least: String(calibrated), clients: String(small.clients.length), why: "the evaluation's noise is calibrated for its smallest group; a smaller one would release a histogram with less noise than accounted" });
    return groups;
  }

  /** The release's inputs for one chunk: the key, the part, under dp the noise multiplier, under distributed DP each client's own key for this release. */
  private releaseInputs(key: readonly number[], part: number, clients: Int32Array, round: number, release: "evaluation" | "personalization") {
    if (this.mechanism === "dp") return { key, part, noiseMultiplier: this.clients.config.evalNoise };
    if (this.mechanism === "secure") return { key, part };
    const clientKeys = { shape: [clients.length, 2], data: Int32Array.from([...clients].flatMap((c) => this.secret.clientKey(round, c, release))) };
    return { key, part, clientKeys };
  }
}

const disposeAll = (...tensors: tf.Tensor[]): void => tensors.forEach((t) => t.dispose());
