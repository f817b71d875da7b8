/**
 * The optimisers, as gradient transformations (./transform.ts): SGD with momentum or
 * Nesterov, the adaptive family (Adam, AdamW, Yogi, Adagrad, RMSProp) and global-norm
 * clipping. Each returns updates to add to the parameters (minus the learning rate times its
 * step direction); hyper-parameters out of range are FT302 errors when the optimiser is made.
 *
 * The rules and defaults follow PyTorch's torch.optim where it has the optimiser (SGD, Adam,
 * AdamW, Adagrad, RMSprop) and optax otherwise (Yogi), so published settings carry over.
 */
import { ftError } from "../../errors/error.js";
import { ops, type Value } from "../algorithms/loose.js";
import { squaredNorm, zeroScalarLike, zerosLikeTree } from "../algorithms/trees.js";
import { requireHyper } from "./schedules.js";
import { learningRateAt, typed, type GradientTransformation, type LearningRate } from "./transform.js";

const unitInterval = (what: string, value: number) => requireHyper(what, value, (x) => x >= 0 && x < 1, "in [0, 1)");
const nonNegative = (what: string, value: number) => requireHyper(what, value, (x) => x >= 0, ">= 0");

function checkLearningRate(what: string, learningRate: LearningRate): void {
  if (typeof learningRate === "number") nonNegative(`${what} learning rate`, learningRate);
}

/**
 * The step: the direction times minus the learning rate, negated as a scalar rather than leaf
 * by leaf; params + g (-lr) is params - lr g exactly, so plain SGD's results are unchanged.
 */
const descend = (direction: Value, lr: Value): Value => ops.mul(direction, typeof lr === "number" ? -lr : ops.neg(lr));

/**
 * sgd's options: momentum, and whether it is Nesterov's.
 *
 * @example
 * const opt = sgd(0.1, { momentum: 0.9, nesterov: true } satisfies SgdOptions);
 */
export interface SgdOptions {
  /** Momentum of the buffer: buffer = momentum buffer + g. */
  readonly momentum: number;
  /** Nesterov's accelerated form: step along g + momentum buffer. */
  readonly nesterov?: boolean;
}

/**
 * Stochastic gradient descent. Plain: params - lr g. With momentum (PyTorch's SGD without
 * dampening, optax.sgd): buffer = momentum buffer + g, step along the buffer, or along
 * g + momentum buffer with Nesterov (Sutskever et al. 2013).
 *
 * @example
 * import { f32, grad, program, square, sum } from "fedtensor";
 * import { applyUpdates, sgd } from "fedtensor/lib";
 * const opt = sgd(0.1, { momentum: 0.9 });
 * const step = program({ w: f32([2]) }, ({ w }) => {
 *   const [updates, state] = opt.update(grad((p: typeof w) => sum(square(p)))(w), opt.init(w));
 *   return { w: applyUpdates(w, updates), state }; // w - 0.1 * 2w, and the momentum buffer
 * });
 */
export function sgd(learningRate: LearningRate): GradientTransformation<"count">;
export function sgd(learningRate: LearningRate, options: SgdOptions): GradientTransformation<"trace">;
export function sgd(learningRate: LearningRate, options?: SgdOptions): GradientTransformation<"count" | "trace"> {
  checkLearningRate("sgd", learningRate);
  if (options === undefined) {
    return typed({
      init: (params) => ({ count: zeroScalarLike(params) }),
      update: (g, state) => [descend(g, learningRateAt(learningRate, state.count)), { count: ops.add(state.count, 1) }],
    });
  }
  const { momentum, nesterov = false } = options;
  unitInterval("sgd momentum", momentum);
  if (nesterov && momentum === 0) throw ftError("FT302", { what: "sgd nesterov", why: "needs a momentum > 0" });
  return typed({
    init: (params) => ({ count: zeroScalarLike(params), trace: zerosLikeTree(params) }),
    update: (g, state) => {
      const trace = ops.add(ops.mul(state.trace, momentum), g);
      const direction = nesterov ? ops.add(g, ops.mul(trace, momentum)) : trace;
      return [descend(direction, learningRateAt(learningRate, state.count)), { count: ops.add(state.count, 1), trace }];
    },
  });
}

/** How the second moment nu accumulates the squared gradient g2. */
type SecondMoment = "ema" | "yogi" | "sum";

interface MomentOptions {
  readonly b1: number;
  readonly b2: number;
  readonly eps: number;
  readonly biasCorrection: boolean;
  /** nu's initial value. */
  readonly initialAccumulator: number;
  readonly weightDecay: number;
}

/**
 * The adaptive family's one rule, optimiser by optimiser a choice of second moment:
 *   mu = b1 mu + (1 - b1) g                                   (mu = g when b1 = 0)
 *   nu = b2 nu + (1 - b2) g2                                  (ema: Adam, RMSProp)
 *   nu = nu - (1 - b2) g2 sign(nu - g2)                       (yogi)
 *   nu = nu + g2                                              (sum: Adagrad)
 *   step along mu^ / (sqrt(nu^) + eps) + weightDecay params
 * where ^ divides by 1 - b^t (t = count + 1) with bias correction.
 */
function scaleByMoments(name: string, learningRate: LearningRate, rule: SecondMoment, options: MomentOptions): GradientTransformation<"moments"> {
  const { b1, b2, eps, biasCorrection, initialAccumulator, weightDecay } = options;
  checkLearningRate(name, learningRate);
  unitInterval(`${name} b1`, b1);
  unitInterval(`${name} b2`, b2);
  nonNegative(`${name} eps`, eps);
  nonNegative(`${name} initial accumulator`, initialAccumulator);
  nonNegative(`${name} weight decay`, weightDecay);
  return typed({
    init: (params) => ({
      count: zeroScalarLike(params),
      mu: zerosLikeTree(params),
      nu: initialAccumulator === 0 ? zerosLikeTree(params) : ops.add(zerosLikeTree(params), initialAccumulator),
    }),
    update: (g, state, params) => {
      const mu = b1 === 0 ? g : ops.add(ops.mul(state.mu, b1), ops.mul(g, 1 - b1));
      const squared = ops.mul(g, g);
      const nu =
        rule === "ema"
          ? ops.add(ops.mul(state.nu, b2), ops.mul(squared, 1 - b2))
          : rule === "yogi"
            ? ops.sub(state.nu, ops.mul(ops.mul(squared, ops.sign(ops.sub(state.nu, squared))), 1 - b2))
            : ops.add(state.nu, squared);
      const count = ops.add(state.count, 1);
      const [muHat, nuHat] = biasCorrection
        ? [b1 === 0 ? mu : ops.div(mu, ops.sub(1, ops.pow(b1, count))), ops.div(nu, ops.sub(1, ops.pow(b2, count)))]
        : [mu, nu];
      const scaled = ops.div(muHat, ops.add(ops.sqrt(nuHat), eps));
      let direction = scaled;
      if (weightDecay !== 0) {
        if (params === undefined) throw ftError("FT302", { what: `${name} update`, why: "weight decay needs the parameters: update(grads, state, params)" });
        direction = ops.add(scaled, ops.mul(params, weightDecay));
      }
      return [descend(direction, learningRateAt(learningRate, state.count)), { count, mu, nu }];
    },
  });
}

/**
 * adam's and adamw's options: the moment decays b1 and b2, eps, bias correction and the
 * accumulator's initial value.
 *
 * @example
 * const opt = adam(1e-3, { b1: 0.9, b2: 0.999 } satisfies AdamOptions);
 */
export interface AdamOptions {
  /** First-moment decay (default 0.9). */
  readonly b1?: number;
  /** Second-moment decay (default 0.999). */
  readonly b2?: number;
  /** Added to sqrt(nu) (default 1e-8). */
  readonly eps?: number;
  /** Divide the moments by 1 - b^t (default true; Reddi et al.'s server Adam has none). */
  readonly biasCorrection?: boolean;
  /** nu's initial value (default 0). */
  readonly initialAccumulator?: number;
}

/**
 * Adam (Kingma & Ba 2015), as torch.optim.Adam without weight decay.
 *
 * @example
 * import { adam, fedAvgProgram, logistic } from "fedtensor/lib";
 * const round = fedAvgProgram(logistic, { clientOptimizer: (lr) => adam(lr, { b1: 0.9, b2: 0.999 }) }); // clients train with Adam, fresh each round
 */
export function adam(learningRate: LearningRate, options: AdamOptions = {}): GradientTransformation<"moments"> {
  return scaleByMoments("adam", learningRate, "ema", { b1: 0.9, b2: 0.999, eps: 1e-8, biasCorrection: true, initialAccumulator: 0, ...options, weightDecay: 0 });
}

/**
 * AdamW (Loshchilov & Hutter 2019): Adam with decoupled weight decay, params shrink by
 * lr weightDecay params each step (torch.optim.AdamW; default weightDecay 0.01 as there).
 *
 * @example
 * import { adamw, fedAvgProgram, transformerModel } from "fedtensor/lib";
 * const round = fedAvgProgram(transformerModel(), { clientOptimizer: (lr) => adamw(lr, { weightDecay: 0.1 }) });
 */
export function adamw(learningRate: LearningRate, options: AdamOptions & { readonly weightDecay?: number } = {}): GradientTransformation<"moments"> {
  return scaleByMoments("adamw", learningRate, "ema", { b1: 0.9, b2: 0.999, eps: 1e-8, biasCorrection: true, initialAccumulator: 0, weightDecay: 0.01, ...options });
}

/**
 * Yogi (Zaheer et al. 2018): Adam whose nu moves by sign(nu - g2), additively; optax's defaults.
 *
 * @example
 * import { fedAvgProgram, logistic, yogi } from "fedtensor/lib";
 * const round = fedAvgProgram(logistic, { clientOptimizer: (lr) => yogi(lr) });
 */
export function yogi(learningRate: LearningRate, options: AdamOptions = {}): GradientTransformation<"moments"> {
  return scaleByMoments("yogi", learningRate, "yogi", { b1: 0.9, b2: 0.999, eps: 1e-3, biasCorrection: true, initialAccumulator: 1e-6, ...options, weightDecay: 0 });
}

/**
 * adagrad's options: eps and the accumulator's initial value.
 *
 * @example
 * const opt = adagrad(0.1, { initialAccumulator: 0.1 } satisfies AdagradOptions);
 */
export interface AdagradOptions {
  /** First-moment decay: 0 (default) steps along g itself, as Duchi et al.; Reddi et al.'s server Adagrad uses 0.9. */
  readonly b1?: number;
  /** Added to sqrt(nu) (default 1e-10). */
  readonly eps?: number;
  /** nu's initial value (default 0). */
  readonly initialAccumulator?: number;
}

/**
 * Adagrad (Duchi et al. 2011): nu sums the squared gradients; torch.optim.Adagrad without lr decay.
 *
 * @example
 * import { adagrad, applyUpdates } from "fedtensor/lib";
 * import { f32, grad, program, square, sum } from "fedtensor";
 * const opt = adagrad(0.5);
 * const step = program({ w: f32([2]) }, ({ w }) => {
 *   const [updates] = opt.update(grad((p: typeof w) => sum(square(p)))(w), opt.init(w));
 *   return applyUpdates(w, updates); // one Adagrad step on |w|^2
 * });
 */
export function adagrad(learningRate: LearningRate, options: AdagradOptions = {}): GradientTransformation<"moments"> {
  return scaleByMoments("adagrad", learningRate, "sum", { b1: 0, b2: 0, eps: 1e-10, initialAccumulator: 0, ...options, biasCorrection: false, weightDecay: 0 });
}

/**
 * rmsprop's options: the decay of the squared gradients' average and eps.
 *
 * @example
 * const opt = rmsprop(1e-3, { decay: 0.9 } satisfies RmspropOptions);
 */
export interface RmspropOptions {
  /** Decay of nu, PyTorch's alpha (default 0.99). */
  readonly decay?: number;
  /** Added to sqrt(nu) (default 1e-8). */
  readonly eps?: number;
}

/**
 * RMSProp (Tieleman & Hinton 2012): g / (sqrt(nu) + eps) with nu an average of g2; torch.optim.RMSprop without momentum.
 *
 * @example
 * import { fedAvgProgram, logistic, rmsprop } from "fedtensor/lib";
 * const round = fedAvgProgram(logistic, { clientOptimizer: (lr) => rmsprop(lr, { decay: 0.9 }) });
 */
export function rmsprop(learningRate: LearningRate, { decay = 0.99, eps = 1e-8 }: RmspropOptions = {}): GradientTransformation<"moments"> {
  return scaleByMoments("rmsprop", learningRate, "ema", { b1: 0, b2: decay, eps, biasCorrection: false, initialAccumulator: 0, weightDecay: 0 });
}

/**
 * Clipping by global norm (Pascanu et al. 2013; optax.clip_by_global_norm): the updates
 * scaled by maxNorm / ||updates|| when their norm over the whole tree exceeds maxNorm.
 *
 * @example
 * import { chain, clipByGlobalNorm, fedAvgProgram, mlp2nn, sgd } from "fedtensor/lib";
 * const round = fedAvgProgram(mlp2nn, { clientOptimizer: (lr) => chain(clipByGlobalNorm(1), sgd(lr)) }); // each local step's gradient clipped to norm 1
 */
export function clipByGlobalNorm(maxNorm: number): GradientTransformation<"empty"> {
  requireHyper("clipByGlobalNorm maxNorm", maxNorm, (x) => x > 0, "> 0");
  return typed({
    init: () => ({}),
    update: (updates, state) => {
      const norm = ops.sqrt(squaredNorm(updates));
      return [ops.mul(updates, ops.div(maxNorm, ops.maximum(norm, maxNorm))), state];
    },
  });
}
