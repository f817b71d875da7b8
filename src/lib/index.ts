/**
 * The model and algorithm library: models as typed parameter trees, optimisers and schedules
 * as gradient transformations, federated algorithms as typed round functions and programs,
 * federated analytics and evaluation programs, and the federated data layer.
 */
export * from "./data/index.js";
export { Rng } from "./random.js";

export {
  convKernel,
  defineModel,
  denseKernel,
  glorotUniform,
  zerosParam,
  type HostParam,
  type HostParams,
  type InputDType,
  type Logits,
  type Member,
  type Model,
  type ModelDefinition,
  type ParamSpecs,
  type ParamsLike,
} from "./models/model.js";
export { logistic, mlp2nn, type LogisticParams, type MlpParams } from "./models/dense.js";
export { cnn, type CnnParams } from "./models/cnn.js";
export { characterModel, type CharacterModelOptions, type CharacterParams } from "./models/character.js";
export { transformerModel, type TransformerOptions, type TransformerParams } from "./models/transformer.js";

export type {
  AnyModel,
  Batch,
  Batches,
  ClientBatchSpecs,
  ComputedFrom,
  JoinCheck,
  Joined,
  JoinedOf,
  ModelParams,
  ReleaseCheck,
  ReleasingRoundFunction,
  ScalarFrom,
  ServerOrLocalScalar,
  ClientBatches,
  EvaluationBatchSpecs,
  Hyper,
  InputDTypeOf,
  ParamSpecsAt,
  ParamsAt,
  RoundData,
  RoundFunction,
  RoundInputs,
  RoundOutputs,
  RoundProgram,
  ScalarSpec,
  ServerScalar,
} from "./algorithms/types.js";
export {
  clientBatchSpecs,
  clientParamSpecs,
  localTrain,
  maskedLoss,
  serverParamSpecs,
  type ClientOptimizer,
  type ClientTrainingOptions,
  type LocalHooks,
  type LocalTraining,
} from "./algorithms/local.js";
export { fedAvg, fedAvgProgram, type FedAvgOptions } from "./algorithms/fedavg.js";
export type { AggregatorOptions } from "./algorithms/aggregation.js";
export { aggregator, aggregatorOf, meanAggregator, releasesPrivateData, type Aggregator, type SomeAggregator } from "./aggregators/aggregator.js";
export { aggregationStages, chainProblem, stageKinds, type ChainCheck, type Releases, type Stage, type StageKind } from "./aggregators/stages.js";
export { fedAvgM, fedAvgMProgram, type FedAvgMHypers, type FedAvgMOptions, type FedAvgMProgram } from "./algorithms/fedavgm.js";
export { fedSgd, fedSgdProgram } from "./algorithms/fedsgd.js";
export { fedProx, fedProxProgram, type FedProxHypers } from "./algorithms/fedprox.js";
export {
  fedOpt,
  fedOptProgram,
  type FedOptHypers,
  type FedOptOptions,
  type FedOptProgram,
  type FedOptState,
  type FedOptStateSpecs,
} from "./algorithms/fedopt.js";
export {
  scaffold,
  scaffoldProgram,
  type ScaffoldClientData,
  type ScaffoldHypers,
  type ScaffoldOptions,
  type ScaffoldOutputs,
  type ScaffoldProgram,
} from "./algorithms/scaffold.js";
export { fedPerProgram, personalNames, type FedPerOptions } from "./algorithms/fedper.js";
export { dittoProgram, type DittoOptions } from "./algorithms/ditto.js";
export { diloco, dilocoInnerOptimizer, dilocoProgram, type DiLoCoHypers, type DiLoCoOptions, type DiLoCoProgram } from "./algorithms/diloco.js";
export {
  adaptiveDefaults,
  filledLike,
  initialAdaptiveState,
  type AdaptiveOptimizer,
  type AdaptiveOptions,
  type AdaptiveState,
  type ServerMomentumOptions,
} from "./algorithms/server-optimizers.js";
export * from "./optimizers/index.js";
export { evaluate, evaluationProgram, type Evaluation, type EvaluationProgram } from "./algorithms/evaluation.js";
export {
  federatedHistogramProgram,
  federatedMeanProgram,
  type FederatedHistogramProgram,
  type FederatedMeanProgram,
} from "./algorithms/analytics.js";
export {
  computeRdp,
  DEFAULT_RDP_ORDERS,
  rdpToEpsilon,
  sampledGaussianEpsilon,
  type PrivacySpent,
  type RdpConversion,
  type SampledGaussian,
} from "./privacy/rdp.js";
export { dpFedAvgEpsilon, dpFedAvgPldEpsilon, dpNoiseSplit, type ComposedGaussian, type DpFedAvgMechanism, type DpFedAvgSpent } from "./privacy/dp-fedavg-epsilon.js";
export { gaussianTreeNoise } from "../front/privacy.js";
export { RunSecret, SECRET_FILE, type SecretPurpose, type UniformSource } from "./privacy/secret.js";
export { RdpAccountant, type RdpAccountantOptions } from "./privacy/accountant.js";
export { PldAccountant, type PldAccountantOptions } from "./privacy/pld/accountant.js";
export {
  initialMimeState,
  mime,
  mimeMomentum,
  mimeProgram,
  type MimeHypers,
  type MimeOptions,
  type MimeProgram,
  type MimeState,
  type MimeVariant,
} from "./algorithms/mime.js";
export { qffl, qfflProgram, type QfflHypers, type QfflProgram } from "./algorithms/qffl.js";
export {
  afl,
  aflProgram,
  initialLambda,
  projectToSimplex,
  type AflClientData,
  type AflHypers,
  type AflLambda,
  type AflOptions,
  type AflProgram,
} from "./algorithms/afl.js";
export {
  classificationEvaluationProgram,
  classificationSums,
  type ClassificationEvaluation,
  type ClassificationEvaluationProgram,
  type ClassificationOptions,
} from "./algorithms/classification.js";
export {
  federatedEvaluationProgram,
  personalizationProgram,
  type ClientMetrics,
  type FederatedEvaluationProgram,
  type HeldOutSpecs,
  type PersonalizationProgram,
} from "./algorithms/federated-evaluation.js";
export { distribution, percentile, type Distribution } from "./run/client-distribution.js";
export { lstmModel, type LstmModelOptions, type LstmParams } from "./models/lstm.js";
export { dpMedian, dpQuantile, type DpQuantileOptions } from "./algorithms/quantile.js";
export {
  combinedNoiseMultiplier,
  gaussianReleasesEpsilon,
  programEpsilon,
  type GaussianRelease,
  type ProgramBudget,
  type ProgramEpsilonOptions,
  type ProgramSpent,
} from "./privacy/program-epsilon.js";
export { distributedDpComposedPldEpsilon, distributedDpPldBound, distributedDpPldEpsilon, type DistributedDpPldBound, type DistributedDpReleases } from "./privacy/distributed-dp-pld.js";
export { calibrateDistributedDp, type DistributedDpCalibration, type DistributedDpParameters } from "../ir/distributed-dp-calibration.js";
