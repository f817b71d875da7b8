/**
 * Everything `fedtensor run` evaluates on an evaluated round, for train.ts: central evaluation on
 * the test set (accuracy and loss as before, plus top-k accuracy with --top-k and the
 * confusion matrix, written to confusion.csv), and federated evaluation on the clients'
 * held-out data with --client-holdout (federated-eval.ts), as metrics columns; and
 * personalization evaluation after the last round.
 */
import type * as tf from "@tensorflow/tfjs";
import { classificationEvaluationProgram } from "../algorithms/classification.js";
import type { AnyModel } from "../algorithms/types.js";
import { batchEvaluation, type FederatedDataset } from "../data/federated.js";
import type { HostData } from "../data/host-tensor.js";
import type { Rng } from "../random.js";
import type { RunConfig } from "./config.js";
import { distributionStats } from "./client-distribution.js";
import { evaluationFiles } from "./evaluation-files.js";
import { confusionCsv, FederatedEvaluator, summarise, writeRunFile, type PersonalizationSummary } from "./federated-eval.js";
import type { PlotMetric } from "./plot.js";
import type { RoundReport } from "./progress.js";
import { runOptionsOf, type DeviceTree } from "./rounds.js";
import { withFeatureShape } from "./setup.js";
import { PrivateEvaluator, type HistogramEstimate } from "./private-eval.js";
import { releasesPrivateData } from "./aggregator-chain.js";
import type { RunSecret } from "../privacy/secret.js";

/** The central evaluation's test batches: the whole test set in batches of this many. */
const TEST_BATCH = 500;

export class RunEvaluation {
  private readonly central: ReturnType<typeof classificationEvaluationProgram>;
  private readonly testInputs: { x: unknown; y: unknown; mask: unknown };
  private readonly federated: FederatedEvaluator | undefined;
  /** In a private run, the evaluation that releases histograms instead of per-client metrics. */
  private readonly released: PrivateEvaluator | undefined;
  /** The top-k accuracy of the latest central evaluation, for this round's row. */
  private testTopK: number | undefined;
  private clientAccuracy: RoundReport["clients"];

  constructor(
    private readonly model: AnyModel,
    data: FederatedDataset<HostData>,
    private readonly config: RunConfig,
    featureShape: readonly number[],
    rng: Rng,
    secret?: RunSecret,
  ) {
    this.central = classificationEvaluationProgram(model, { topK: config.topK });
    const test = batchEvaluation(data.test, TEST_BATCH);
    this.testInputs = { x: withFeatureShape(test.x, 2, featureShape), y: test.y, mask: test.mask };
    this.federated = config.clientHoldout > 0 ? new FederatedEvaluator(model, data, config, featureShape, rng) : undefined;
    this.released = this.federated !== undefined && releasesPrivateData(config.aggregator) ? new PrivateEvaluator(this.federated, secret!) : undefined;
  }

  /** The plot's panel of the clients' held-out accuracy (mean and percentiles), when the run evaluates on the clients. */
  get plotMetrics(): readonly PlotMetric[] {
    if (this.federated === undefined) return [];
    const series = distributionStats.map((s) => ({ key: `client_accuracy_${s}`, title: `client ${s}` }));
    return [{ key: "client_accuracy_mean", title: "Client held-out accuracy", format: ".1%", series }];
  }

  /**
   * Central evaluation of `params`: accuracy and loss as tensors for the round's row (train.ts
   * reads and disposes them); its top-k accuracy is kept for columns(), its confusion matrix
   * written to confusion.csv.
   */
  async test(params: DeviceTree): Promise<{ accuracy: tf.Tensor; loss: tf.Tensor }> {
    const out = (await this.central.run({ params: params as never, ...this.testInputs } as never, runOptionsOf(this.config))) as unknown as Record<"accuracy" | "loss" | "topKAccuracy" | "confusion", tf.Tensor>;
    this.testTopK = (await out.topKAccuracy.data())[0]!;
    const confusion = (await out.confusion.data()) as Float32Array;
    out.topKAccuracy.dispose();
    out.confusion.dispose();
    await writeRunFile(this.config.out, evaluationFiles.confusion, confusionCsv(confusion, this.model.classes));
    return { accuracy: out.accuracy, loss: out.loss };
  }

  /**
   * The round's columns beyond train_loss, test_accuracy and test_loss: test top-k accuracy
   * (--top-k above 1) and the distribution across clients (--client-holdout), null on a round
   * not evaluated. Federated evaluation of `params` runs here on an evaluated round.
   */
  async columns(params: DeviceTree, round: number, evaluated: boolean): Promise<Record<string, number | null>> {
    const k = this.config.topK;
    const topK = k > 1 ? { [`test_top${k}_accuracy`]: evaluated ? this.testTopK! : null } : {};
    if (this.federated === undefined) return topK;
    if (this.released !== undefined) {
      const estimate = evaluated ? await this.released.evaluate(params, round) : undefined;
      if (estimate !== undefined) this.clientAccuracy = { mean: estimate.mean, p10: estimate.p10 };
      return { ...topK, ...PrivateEvaluator.columns(this.config, estimate) };
    }
    if (!evaluated) return { ...topK, ...FederatedEvaluator.columns(this.config, undefined) };
    const evaluation = await this.federated.evaluate(params, round);
    await this.federated.writeClientFiles(this.config.out, evaluation);
    const summary = summarise(evaluation.results);
    this.clientAccuracy = { mean: summary.accuracy.mean, p10: summary.accuracy.p10 };
    return { ...topK, ...FederatedEvaluator.columns(this.config, summary) };
  }

  /** The latest clients' accuracy for the progress line. */
  get progress(): Pick<RoundReport, "clients"> {
    return this.clientAccuracy === undefined ? {} : { clients: this.clientAccuracy };
  }

  /** Personalization evaluation after `round`, the last (--personalize-epochs): files written, summary returned; undefined when not asked. */
  async personalize(params: DeviceTree, round: number): Promise<PersonalizationSummary | undefined> {
    if (this.federated === undefined || this.config.personalizeEpochs === 0) return undefined;
    if (this.released !== undefined) {
      const { before, after } = await this.released.personalize(params, round);
      return { epochs: this.config.personalizeEpochs, lr: this.config.lr, topK: this.config.topK, before: estimated(before), after: estimated(after) };
    }
    return this.federated.writePersonalization(this.config.out, await this.federated.personalize(params, round));
  }
}

/** A released histogram's estimate as personalization's summary holds a distribution: NaN (null in JSON) for what it does not tell. */
function estimated(e: HistogramEstimate): PersonalizationSummary["before"] {
  const unknown = { mean: NaN, weighted: NaN, p10: NaN, p50: NaN, p90: NaN };
  return { clients: Math.round(e.clients), accuracy: { mean: e.mean, weighted: NaN, p10: e.p10, p50: e.p50, p90: e.p90 }, topKAccuracy: unknown, loss: unknown };
}

/**
 * Whether round `round` is evaluated on the test set: every --eval-every-th round, and the
 * run's last (`last`: round --rounds, or the round after which --dp-target-epsilon stops the
 * run), so the final accuracy is always measured. A resumed run that goes further evaluates
 * its new last round; the rows of the rounds before the checkpoint are kept as they were.
 */
export const isEvaluatedRound = (config: Pick<RunConfig, "evalEvery">, round: number, last: boolean): boolean => last || round % config.evalEvery === 0;

/**
 * The line a run shorter than --eval-every prints before its first round: only its last round
 * is evaluated, so the plot's test panels have one point. The interval stays as given (a
 * large one is how a run turns evaluation off, and an evaluation costs a pass over the test
 * set); the line says how to get a curve. Undefined for other runs, or when no round is left.
 */
export function shortRunNotice(config: Pick<RunConfig, "evalEvery" | "rounds">, firstRound: number): string | undefined {
  if (config.rounds >= config.evalEvery || firstRound >= config.rounds) return undefined;
  return `--eval-every ${config.evalEvery} is more than the run's ${config.rounds} rounds: the test set is evaluated at the last round only (one point in the plot's test panels); --eval-every 1 evaluates every round`;
}

/** The line the run prints after personalization evaluation. */
export function personalizationLine({ epochs, before, after }: PersonalizationSummary): string {
  const pct = (x: number) => `${(100 * x).toFixed(2)}%`;
  const show = (d: PersonalizationSummary["before"]) => `mean ${pct(d.accuracy.mean)}, p10 ${pct(d.accuracy.p10)}, p50 ${pct(d.accuracy.p50)}, p90 ${pct(d.accuracy.p90)}`;
  return `personalization (${epochs} local epoch${epochs === 1 ? "" : "s"}, ${before.clients} clients): held-out accuracy before ${show(before)}; after ${show(after)}`;
}
