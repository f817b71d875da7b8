/**
 * What a run trains on: the data set split into clients, and the model, from the run config.
 */
import { ftError } from "../../errors/error.js";
import type { AnyModel } from "../algorithms/types.js";
import { federate, poissonCohort, sampleRound, type FederatedDataset, type RoundSample } from "../data/federated.js";
import type { HostData, HostTensor } from "../data/host-tensor.js";
import { holdOutPerClient } from "../data/holdout.js";
import type { LabelledDataset } from "../data/dataset.js";
import { loadFashionMnist, loadMnist, type Split } from "../data/mnist.js";
import { partitionDirichlet, partitionIid, partitionShards } from "../data/partition.js";
import { partitionQuantity } from "../data/quantity-skew.js";
import { syntheticFedProx } from "../data/synthetic.js";
import { syntheticLogistic } from "../models/synthetic-logistic.js";
import { loadSotuCharacters } from "../data/sotu.js";
import { characterModel } from "../models/character.js";
import { cnn } from "../models/cnn.js";
import { logistic, mlp2nn } from "../models/dense.js";
import { lstmModel } from "../models/lstm.js";
import { transformerModel } from "../models/transformer.js";
import { Rng } from "../random.js";
import type { RunSecret } from "../privacy/secret.js";
import type { RunConfig } from "./config.js";
import { roundBatchSize } from "./data-limits.js";
import { samplingRateOf } from "./privacy.js";

export const models: Readonly<Record<string, AnyModel>> = { logistic, "2nn": mlp2nn, cnn, char: characterModel(), transformer: transformerModel(), lstm: lstmModel() };

export function modelFor(config: RunConfig): AnyModel {
  // Synthetic's examples have 60 features: its logistic regression is its own.
  if (config.dataset === "synthetic" && config.model === "logistic") return syntheticLogistic as AnyModel;
  const model = models[config.model];
  if (model === undefined) throw ftError("FT305", { option: "model", why: `no model '${config.model}' in this build` });
  return model;
}

/** The fields of a run config that federatedData reads: two configs equal in these get the same data (an engine worker's cache key). */
export const dataFields = ["dataset", "partition", "clients", "alpha", "seed", "clientHoldout", "syntheticAlpha", "syntheticBeta"] as const;

export const federatedDataKey = (config: Pick<RunConfig, (typeof dataFields)[number]>): string => JSON.stringify(dataFields.map((field) => config[field] ?? null));

/**
 * The training set split among `config.clients` clients as the partition says (images), or by
 * president (text), each client's examples then split into training and held-out parts when
 * --client-holdout asks (seeded, from the seed's fork "holdout").
 */
export function federatedData(config: RunConfig): FederatedDataset<HostData> {
  const data = clientData(config);
  return config.clientHoldout > 0 ? holdOutPerClient(data, config.clientHoldout, Rng.fromSeed(config.seed).fork("holdout")) : data;
}

function clientData(config: RunConfig): FederatedDataset<HostData> {
  if (config.dataset === "sotu") {
    if (config.partition !== "iid") {
      throw ftError("FT305", { option: "partition", why: "sotu is partitioned by president already; --partition applies to the image sets" });
    }
    return loadSotuCharacters();
  }
  if (config.dataset === "synthetic") {
    if (config.partition !== "iid") {
      throw ftError("FT305", { option: "partition", why: "synthetic's clients are its own (each with its model and inputs); --partition applies to the image sets" });
    }
    const options = { alpha: config.syntheticAlpha ?? 1, beta: config.syntheticBeta ?? 1, clients: config.clients };
    return syntheticFedProx(options, Rng.fromSeed(config.seed).fork("synthetic"));
  }
  const train = imageSet(config.dataset, "train");
  const test = imageSet(config.dataset, "test");
  const rng = Rng.fromSeed(config.seed).fork("partition");
  const clients = config.clients;
  // Every client needs an example (two shards of one, with shards), whatever the partition; said once, in the flag's name.
  const needed = config.partition === "shards" ? 2 * clients : clients;
  if (needed > train.y.length) {
    const per = config.partition === "shards" ? "two shards of at least one example each" : "at least one example";
    throw ftError("FT305", { option: "--clients", why: `${clients} clients, each needing ${per}, exceed the ${train.y.length} training examples of ${config.dataset}` });
  }
  const partition =
    config.partition === "iid"
      ? partitionIid(train.y.length, clients, rng)
      : config.partition === "shards"
        ? partitionShards(train.y, { numShards: 2 * clients, shardsPerClient: 2 }, rng)
        : config.partition === "quantity"
          ? partitionQuantity(train.y.length, { numClients: clients, alpha: config.alpha ?? 0.5 }, rng)
          : partitionDirichlet(train.y, train.numClasses, { numClients: clients, alpha: config.alpha ?? 0.5, minExamplesPerClient: 1 }, rng);
  return federate(train, test, partition);
}

/**
 * The image sets runs have read in this process, by data set and split: a process that runs
 * several trainings (a sweep, the tests, a server resuming) reads and converts each once. Runs
 * only read them (batches are copies), so one copy serves them all.
 */
const imageSets = new Map<string, LabelledDataset<Float32Array>>();

function imageSet(dataset: "mnist" | "fashion-mnist", split: Split): LabelledDataset<Float32Array> {
  const key = `${dataset}/${split}`;
  let set = imageSets.get(key);
  if (set === undefined) imageSets.set(key, (set = (dataset === "mnist" ? loadMnist : loadFashionMnist)(split)));
  return set;
}

/** The model's view of one example's features: the data's shape, or a reshape with the same count (784 for 28x28). */
export function featureShapeFor(model: AnyModel, dataShape: readonly number[]): readonly number[] {
  const count = (shape: readonly number[]) => shape.reduce((a, b) => a * b, 1);
  if (count(model.inputShape) !== count(dataShape)) {
    throw ftError("FT302", {
      what: `model ${model.name}`,
      why: `takes examples of shape [${model.inputShape.join(",")}] but the data's are [${dataShape.join(",")}]`,
    });
  }
  return model.inputShape;
}

/** A host batch tensor seen with the model's example shape (e.g. 28x28 images as 784 features). */
export function withFeatureShape<D extends HostData>(t: HostTensor<D>, leading: number, featureShape: readonly number[]): HostTensor<D> {
  return { shape: [...t.shape.slice(0, leading), ...featureShape], data: t.data };
}

/**
 * Round `round`'s cohort as the run config samples it, its batches shaped for the model. The
 * batches depend only on the data, the config and the round (the seed's forks), so a worker on
 * another machine builds a chunk's batches bit for bit as the coordinator would. The cohort is
 * `cohort` when given (a DP round's, privateCohort), else clientsPerRound clients drawn from the seed.
 */
export function roundSample(data: FederatedDataset<HostData>, config: RunConfig, rng: Rng, round: number, featureShape: readonly number[], cohort?: Int32Array): RoundSample<HostData> {
  const options = { rng, round, clientsPerRound: config.clientsPerRound, batchSize: roundBatchSize(config, data), epochs: config.localEpochs, dropout: config.dropout };
  const sample = sampleRound(data, cohort === undefined ? options : { ...options, cohort });
  return {
    ...sample,
    batch: (clients, steps) => {
      const batches = sample.batch(clients, steps);
      return { ...batches, x: withFeatureShape(batches.x, 3, featureShape) };
    },
  };
}

/**
 * The clients a DP round samples: each joins independently with probability
 * q = clientsPerRound / clients, drawn from the run's secret (Poisson sampling, as the
 * accountant assumes; the seed cannot predict it).
 */
export function privateCohort(data: FederatedDataset<HostData>, config: RunConfig, secret: RunSecret, round: number): Int32Array {
  return poissonCohort(data.clientIndices.length, samplingRateOf(config), secret.cohortStream(round));
}
