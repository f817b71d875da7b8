/**
 * Federated and personalization evaluation in `fedtensor run` (--client-holdout,
 * --eval-clients, --personalize-epochs): the evaluated clients' held-out batches
 * streamed in bucketed chunks as a round's are (cohort.ts), so memory is bounded by a chunk
 * whatever the number of clients; each chunk runs federatedEvaluationProgram (or
 * personalizationProgram) in this process, also when --engine sends the rounds to workers.
 *
 * Federated evaluation runs on the rounds central evaluation runs on (--eval-every and the last
 * round): the two are read side by side, and it costs about what central evaluation does.
 */
import { join } from "node:path";
import type * as tf from "@tensorflow/tfjs";
import { ftError } from "../../errors/error.js";
import { federatedEvaluationProgram, personalizationProgram } from "../algorithms/federated-evaluation.js";
import type { AnyModel } from "../algorithms/types.js";
import { batchCohort, sampleCohort, type FederatedDataset } from "../data/federated.js";
import type { HostData } from "../data/host-tensor.js";
import { batchHeldOut } from "../data/holdout.js";
import type { Rng } from "../random.js";
import { evaluationFiles } from "./evaluation-files.js";
import { distribution, distributionColumns, distributionStats, type Distribution } from "./client-distribution.js";
import { writeFileAtomic } from "./atomic-file.js";
import { cohortChunks } from "./cohort.js";
import { roundBatchSize } from "./data-limits.js";
import type { RunConfig } from "./config.js";
import { csvLine } from "./metrics.js";
import { clientTraining } from "./optimizers.js";
import { runOptionsOf, type DeviceTree } from "./rounds.js";
import { withFeatureShape } from "./setup.js";
import { fileFault } from "./file-faults.js";

/** Each evaluated client's held-out metrics, in the order of `clients` (positions in the data set). */
export interface ClientResults {
  readonly clients: Int32Array;
  readonly examples: Float32Array;
  readonly accuracy: Float32Array;
  readonly topKAccuracy: Float32Array;
  readonly loss: Float32Array;
}

type ClientOutputs = { accuracy: tf.Tensor; topKAccuracy: tf.Tensor; loss: tf.Tensor; examples: tf.Tensor };

async function readClients(out: ClientOutputs): Promise<Omit<ClientResults, "clients">> {
  const read = async (t: tf.Tensor) => Float32Array.from((await t.data()) as Float32Array);
  const results = { examples: await read(out.examples), accuracy: await read(out.accuracy), topKAccuracy: await read(out.topKAccuracy), loss: await read(out.loss) };
  for (const t of Object.values(out)) t.dispose();
  return results;
}

function joinResults(parts: readonly ClientResults[]): ClientResults {
  const cat = <T extends Int32Array | Float32Array>(make: (n: number) => T, pick: (r: ClientResults) => T): T => {
    const out = make(parts.reduce((n, r) => n + pick(r).length, 0));
    let offset = 0;
    for (const r of parts) {
      out.set(pick(r) as never, offset);
      offset += pick(r).length;
    }
    return out;
  };
  const floats = (n: number) => new Float32Array(n);
  return {
    clients: cat((n) => new Int32Array(n), (r) => r.clients),
    examples: cat(floats, (r) => r.examples),
    accuracy: cat(floats, (r) => r.accuracy),
    topKAccuracy: cat(floats, (r) => r.topKAccuracy),
    loss: cat(floats, (r) => r.loss),
  };
}

/** The distributions of accuracy, top-k accuracy and loss across the clients that hold examples out. */
export function summarise(results: ClientResults): { clients: number; accuracy: Distribution; topKAccuracy: Distribution; loss: Distribution } {
  const across = (values: Float32Array): Distribution => {
    const { clients: _, ...d } = distribution(values, results.examples);
    return d;
  };
  return { clients: results.examples.filter((n) => n > 0).length, accuracy: across(results.accuracy), topKAccuracy: across(results.topKAccuracy), loss: across(results.loss) };
}

/** A confusion matrix [classes * classes] as CSV: one row per true label, one column per predicted class. */
export function confusionCsv(counts: ArrayLike<number>, classes: number): string {
  const header = ["label", ...Array.from({ length: classes }, (_, c) => `predicted_${c}`)];
  const rows = Array.from({ length: classes }, (_, label) => [label, ...Array.from({ length: classes }, (_, c) => counts[label * classes + c]!)]);
  return [header, ...rows].map(csvLine).join("");
}

export class FederatedEvaluator {
  private readonly evaluation: ReturnType<typeof federatedEvaluationProgram>;
  private readonly topK: number;

  /** The run's model, data, config, feature shape and random stream: PrivateEvaluator evaluates the same clients with them. */
  constructor(
    readonly model: AnyModel,
    readonly data: FederatedDataset<HostData>,
    readonly config: RunConfig,
    readonly featureShape: readonly number[],
    readonly rng: Rng,
  ) {
    this.topK = config.topK;
    this.evaluation = federatedEvaluationProgram(model, { topK: this.topK });
  }

  /** The metrics columns of a round, null where it was not evaluated; their names are fixed for the run. */
  static columns(config: RunConfig, results: ReturnType<typeof summarise> | undefined): Record<string, number | null> {
    const names = (prefix: string) => distributionStats.map((s) => `${prefix}_${s}`);
    const topK = config.topK > 1 ? names(`client_top${config.topK}_accuracy`) : [];
    const all = ["clients_evaluated", ...names("client_accuracy"), ...topK, "client_loss_mean", "client_loss_weighted"];
    if (results === undefined) return Object.fromEntries(all.map((name) => [name, null]));
    const { mean, weighted } = results.loss;
    return {
      clients_evaluated: results.clients,
      ...distributionColumns("client_accuracy", results.accuracy),
      ...(config.topK > 1 ? distributionColumns(`client_top${config.topK}_accuracy`, results.topKAccuracy) : {}),
      client_loss_mean: mean,
      client_loss_weighted: weighted,
    };
  }

  /** The clients evaluated after `round`: all of them, or --eval-clients drawn from the round's own fork. */
  clientsAt(round: number): Int32Array {
    const total = this.data.clientIndices.length;
    const wanted = this.config.evalClients;
    if (wanted === 0 || wanted >= total) return Int32Array.from({ length: total }, (_, c) => c);
    return sampleCohort(total, wanted, this.rng.fork(`federated-eval:${round}`));
  }

  heldOutSteps = (client: number) => Math.max(1, Math.ceil(this.data.clientHeldOut![client]!.length / this.config.batchSize));

  /** The held-out batches of `clients` (positions in the data set), `steps` of them each when given. */
  heldOutInputs(clients: Int32Array, steps?: number) {
    const b = batchHeldOut(this.data, clients, this.config.batchSize, this.rng.fork("held-out"), steps);
    return { x: withFeatureShape(b.x, 3, this.featureShape), y: b.y, mask: b.mask };
  }

  /** Each evaluated client's held-out metrics under `params`, and their confusion matrix summed; FT325 when none holds an example out. */
  async evaluate(params: DeviceTree, round: number): Promise<{ results: ClientResults; confusion: Float32Array }> {
    const parts: ClientResults[] = [];
    const confusion = new Float32Array(this.model.classes * this.model.classes);
    for (const chunk of cohortChunks(this.clientsAt(round), this.heldOutSteps, this.config.chunkClients)) {
      const out = (await this.evaluation.run({ params: params as never, ...this.heldOutInputs(chunk.clients, chunk.steps) } as never, runOptionsOf(this.config))) as unknown as ClientOutputs & { confusion: tf.Tensor };
      const counts = (await out.confusion.data()) as Float32Array;
      counts.forEach((n, i) => (confusion[i]! += n));
      out.confusion.dispose();
      const { confusion: _, ...perClient } = out;
      parts.push({ clients: chunk.clients, ...(await readClients(perClient)) });
    }
    const results = joinResults(parts);
    assertHeldOut(results, round);
    return { results, confusion };
  }

  /**
   * Personalization evaluation after the last round: each client evaluated then fine-tunes
   * `params` for --personalize-epochs passes over its training split (the clients' optimiser,
   * --batch-size, --lr), and is evaluated on its held-out split before and after.
   */
  async personalize(params: DeviceTree, round: number): Promise<{ before: ClientResults; after: ClientResults }> {
    const program = personalizationProgram(this.model, { topK: this.topK, ...clientTraining(this.config) });
    const epochs = this.config.personalizeEpochs;
    const batchSize = roundBatchSize(this.config, this.data);
    const trainSteps = (client: number) => Math.max(1, Math.ceil((epochs * this.data.clientIndices[client]!.length) / batchSize));
    const before: ClientResults[] = [];
    const after: ClientResults[] = [];
    for (const chunk of cohortChunks(this.clientsAt(round), trainSteps, this.config.chunkClients)) {
      const train = batchCohort(this.data, chunk.clients, { batchSize, epochs, rng: this.rng.fork("personalize"), steps: chunk.steps });
      const inputs = { params, lr: this.config.lr, trainX: withFeatureShape(train.x, 3, this.featureShape), trainY: train.y, trainMask: train.mask, ...this.heldOutInputs(chunk.clients) };
      const out = (await program.run(inputs as never, runOptionsOf(this.config))) as unknown as { before: ClientOutputs; after: ClientOutputs };
      before.push({ clients: chunk.clients, ...(await readClients(out.before)) });
      after.push({ clients: chunk.clients, ...(await readClients(out.after)) });
    }
    const results = { before: joinResults(before), after: joinResults(after) };
    assertHeldOut(results.before, round);
    return results;
  }

  /** Writes client-metrics.csv (each client's latest held-out metrics) and client-confusion.csv. */
  async writeClientFiles(out: string, { results, confusion }: { results: ClientResults; confusion: Float32Array }): Promise<void> {
    const k = this.config.topK;
    const header = ["client", "held_out_examples", "accuracy", ...(k > 1 ? [`top${k}_accuracy`] : []), "loss"];
    const rows = Array.from(results.clients, (client, i) => [this.data.clientIds[client]!, results.examples[i]!, results.accuracy[i]!, ...(k > 1 ? [results.topKAccuracy[i]!] : []), results.loss[i]!]);
    await writeRunFile(out, evaluationFiles.clientMetrics, [header, ...rows].map(csvLine).join(""));
    await writeRunFile(out, evaluationFiles.clientConfusion, confusionCsv(confusion, this.model.classes));
  }

  /** Writes personalization.csv (per client, before and after) and personalization.json (the distributions); returns the latter. */
  async writePersonalization(out: string, { before, after }: { before: ClientResults; after: ClientResults }): Promise<PersonalizationSummary> {
    const header = ["client", "held_out_examples", "accuracy_before", "accuracy_after", "loss_before", "loss_after"];
    const rows = Array.from(before.clients, (client, i) => [this.data.clientIds[client]!, before.examples[i]!, before.accuracy[i]!, after.accuracy[i]!, before.loss[i]!, after.loss[i]!]);
    await writeRunFile(out, evaluationFiles.personalization, [header, ...rows].map(csvLine).join(""));
    const summary: PersonalizationSummary = { epochs: this.config.personalizeEpochs, lr: this.config.lr, topK: this.topK, before: summarise(before), after: summarise(after) };
    await writeRunFile(out, evaluationFiles.personalizationSummary, `${JSON.stringify(summary, null, 2)}\n`);
    return summary;
  }
}

export interface PersonalizationSummary {
  readonly epochs: number;
  readonly lr: number;
  readonly topK: number;
  readonly before: ReturnType<typeof summarise>;
  readonly after: ReturnType<typeof summarise>;
}

function assertHeldOut(results: ClientResults, round: number): void {
  if (results.examples.some((n) => n > 0)) return;
  throw ftError("FT325", { clients: results.clients.length, round, why: "none of them holds an example out (a client of one example keeps it to train on); raise --client-holdout or evaluate more clients" });
}

/** Writes a file of the run's folder whole or not at all (atomic-file.ts); its file-system errors as FT307. */
export async function writeRunFile(out: string, name: string, content: string): Promise<void> {
  try {
    await writeFileAtomic(join(out, name), content);
  } catch (error) {
    throw fileFault(error, out, `write ${name}`);
  }
}
