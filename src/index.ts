/**
 * FedTensor: federated tensor programs whose placement and shape safety the TypeScript
 * checker proves. This module is the public surface of the language.
 */
export { catalogue, errorCodes, type ErrorCode } from "./errors/catalogue.js";
export { FedTensorError } from "./errors/error.js";
export { f32, i32, bool, atServer, atClients } from "./front/specs.js";
export { program, Program, signatureOf, type ProgramOptions } from "./front/program.js";
export { keepOnClients } from "./front/client-state.js";
export { broadcast, map, reduceSum, reduceMean, reduceMax, reduceMin, reduceWeightedMean, aggregate, type Aggregation } from "./front/placement.js";
export {
  add,
  sub,
  mul,
  div,
  pow,
  maximum,
  minimum,
  less,
  lessEqual,
  greater,
  greaterEqual,
  equal,
  notEqual,
  logicalAnd,
  logicalOr,
  logicalNot,
  neg,
  abs,
  sign,
  exp,
  log,
  sqrt,
  relu,
  sigmoid,
  tanh,
  sin,
  cos,
  stopGradient,
} from "./front/elementwise.js";
export {
  matmul,
  transpose,
  reshape,
  expandDims,
  concat,
  stack,
  slice,
  oneHot,
  sum,
  mean,
  max,
  min,
  argmax,
  cast,
  where,
  clip,
  zerosLike,
} from "./front/tensor-ops.js";
export {
  softmax,
  logSoftmax,
  logsumexp,
  layerNorm,
  groupNorm,
  softmaxCrossEntropy,
  sparseSoftmaxCrossEntropy,
  meanSquaredError,
  conv2d,
  maxPool2d,
  dropout,
  type WindowOptions,
} from "./front/nn.js";
export { mod, log1p, floor, round, square, softplus } from "./front/elementwise.js";
export { argmin, norm, squaredDistance, type NormOptions } from "./front/tensor-ops.js";
export { sigmoidCrossEntropy, binaryCrossEntropy } from "./front/nn.js";
export { argsort, cumsum, gather, sort, take, topk, type CumsumOptions, type TopK } from "./front/sequence-ops.js";
export { einsum } from "./front/einsum.js";
export { fori, scan, type LoopIndex } from "./front/loops.js";
export { bernoulli, clientIndex, foldIn, normal, randomKey, randomPermutation, split, uniform, type Key } from "./front/random.js";
export { grad, jvp, valueAndGrad } from "./front/grad.js";
export { secureSum, type SecureSumOptions, type SecureSumOptionsFor, type SecureSumPlacementCheck } from "./front/secure.js";
export { constant, zeros, localZeros, ones, full, type LocalZeros } from "./front/constants.js";
export { loadProgram } from "./front/load.js";
export { interpret } from "./interpret/reference.js";
export type { RunOptions } from "./runtime/run.js";
export { useBackend, backendNames, type BackendName } from "./runtime/backend.js";
export type { HostTensor } from "./runtime/inputs.js";
export type { Tensor, TensorSpec, Tree, Dim, Shape, DType, Placement, ReleasedServer, ValueOf, SpecOf, DrawnFrom } from "../types/tensor.js";
export type { Kept, KeptMark } from "../types/placement.js";
export type { ProgramIR, ValueType, Node, Graph } from "./ir/types.js";
export { printType } from "./ir/print.js";
export { clipByNorm, globalNorm, krum, reduceMedian, reduceTrimmedMean, zeroAboveNorm, type KrumOptions, type TrimmedMeanOptions } from "./front/robust.js";
export { quantizedBits, stochasticQuantize, type QuantizeOptions } from "./front/quantize.js";
export { dpSum, dpMean, type DpSumOptions, type DpMeanOptions } from "./front/privacy.js";
export { secureMean, type SecureMeanOptions } from "./front/secure-mean.js";
export { secretKey, SecretKey } from "./front/secret-key.js";
// A host-side accountant that depends on src/lib/privacy/rdp.ts and the error catalogue only.
export { RdpAccountant, type RdpAccountantOptions } from "./lib/privacy/accountant.js";
export { PldAccountant, type PldAccountantOptions } from "./lib/privacy/pld/accountant.js";
export type { PrivacySpent, RdpConversion } from "./lib/privacy/rdp.js";
export type { ClientsOptions } from "./front/specs.js";
export { helper } from "./front/helper.js";
export type { Float, Int, Bool, AtServer, AtClients, PrivateAtClients, Member, PrivateMember, Helper } from "../types/helper.js";
export { randomHadamard, inverseRandomHadamard } from "./front/rotation.js";
export { distributedDpSum, type DistributedDpSumOptions } from "./front/distributed-dp.js";
export type { ProgramBudgetOption } from "./front/budget.js";
export type { ProgramEpsilonQuery } from "./front/program.js";
export { programEpsilon, type ProgramSpent } from "./lib/privacy/program-epsilon.js";
