/** Optimisers and learning-rate schedules as gradient transformations (optax's design). */
export { adagrad, adam, adamw, clipByGlobalNorm, rmsprop, sgd, yogi, type AdagradOptions, type AdamOptions, type RmspropOptions, type SgdOptions } from "./optimizers.js";
export {
  constantSchedule,
  cosineDecay,
  exponentialDecay,
  joinSchedules,
  linearSchedule,
  stepDecay,
  warmupCosineDecay,
  type ExponentialDecayOptions,
  type WarmupCosineOptions,
} from "./schedules.js";
export {
  applyUpdates,
  chain,
  type GradientTransformation,
  type LearningRate,
  type Like,
  type OptimizerState,
  type PlacedSchedule,
  type Schedule,
  type StateKind,
  type StateKinds,
  type StepCount,
} from "./transform.js";
