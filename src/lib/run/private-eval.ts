/**
 * Federated and personalization evaluation in a private run (--aggregator with dp or secure,
 * and --client-holdout, --personalize-epochs): the clients' accuracies stay on the clients, and
 * the server learns histograms of them (src/lib/algorithms/private-evaluation.ts): DP ones in a
 * dp run, whose cost the run's epsilon includes (src/lib/run/privacy.ts evaluationReleases);
 * exact counts through secure aggregation in a secure run. The evaluated clients go in chunks
 * as in federated-eval.ts (secure groups of at least 2 with secure), each chunk its own release
 * over its own clients, the chunks' histograms summed.
 *
 * No per-client file is written: client-metrics.csv, client-confusion.csv and
 * personalization.csv are a public run's. What the metrics columns and personalization.json
 * hold is read off the released histograms: the estimated number of clients, their mean
 * accuracy (bin centres) and percentiles (linear within a bin), null where the histogram says
 * nothing (the example-weighted mean, top-k accuracy, loss).
 */
import type * as tf from "@tensorflow/tfjs";
import { accuracyBins, privateEvaluationProgram, privatePersonalizationProgram, type HistogramMechanism } from "../algorithms/private-evaluation.js";
import { batchCohort } from "../data/federated.js";
import type { RunSecret } from "../privacy/secret.js";
import { distributionStats } from "./client-distribution.js";
import { cohortChunks, secureGroups } from "./cohort.js";
import { isDpRun } from "./privacy.js";
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
    this.mechanism = isDpRun(clients.config) ? "dp" : "secure";
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
      const inputs = { params, ...this.clients.heldOutInputs(chunk.clients, chunk.steps), ...this.releaseInputs(key, part) };
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
      const inputs = { params, lr: this.clients.config.lr, trainX: withFeatureShape(train.x, 3, this.clients.featureShape), trainY: train.y, trainMask: train.mask, ...this.clients.heldOutInputs(chunk.clients), ...this.releaseInputs(key, part) };
      const out = (await program.run(inputs as never, runOptionsOf(this.clients.config))) as unknown as { before: tf.Tensor; after: tf.Tensor };
      (await out.before.data()).forEach((n, b) => (before[b]! += n));
      (await out.after.data()).forEach((n, b) => (after[b]! += n));
      disposeAll(out.before, out.after);
    }
    const results = { before: histogramEstimate(before), after: histogramEstimate(after) };
    const released = this.mechanism === "dp" ? { released: "DP histograms of the clients' held-out accuracies", noiseMultiplier: this.clients.config.evalNoise } : { released: "exact histograms of the clients' held-out accuracies through secure aggregation (simulated in one process)" };
    const summary = { epochs, lr: this.clients.config.lr, ...released, bins: accuracyBins, ...results };
    await writeRunFile(this.clients.config.out, evaluationFiles.personalizationSummary, `${JSON.stringify(summary, null, 2)}\n`);
    return results;
  }

  /** The evaluated clients after `round` in chunks: secure groups of at least 2 under secure aggregation. */
  private chunks(round: number, stepsOf: (client: number) => number) {
    const clients = this.clients.clientsAt(round);
    return this.mechanism === "secure" ? secureGroups(clients, stepsOf, this.clients.config.chunkClients, 2) : cohortChunks(clients, stepsOf, this.clients.config.chunkClients);
  }

  /** The release's inputs for one chunk: the key, the part, and under dp the noise multiplier. */
  private releaseInputs(key: readonly number[], part: number) {
    return { key, part, ...(this.mechanism === "dp" ? { noiseMultiplier: this.clients.config.evalNoise } : {}) };
  }
}

const disposeAll = (...tensors: tf.Tensor[]): void => tensors.forEach((t) => t.dispose());
