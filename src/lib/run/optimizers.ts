/**
 * The clients' optimiser and the learning-rate schedule of `fedtensor run`, from its options.
 *
 * The client optimiser's state starts afresh every round (as in FedJAX), so a schedule inside
 * it would count local steps; `--lr-schedule` instead schedules `--lr` over the rounds, as
 * TFF's schedule_learning_rate does: round r trains with schedule(r - 1), the count of rounds
 * before it. The schedule is the library's, evaluated by the reference interpreter once per
 * round on a one-node program.
 */
import { program } from "../../front/program.js";
import { f32 } from "../../front/specs.js";
import { interpret, type OutputLeaf } from "../../interpret/reference.js";
import type { ClientOptimizer } from "../algorithms/local.js";
import { adagrad, adam, adamw, clipByGlobalNorm, rmsprop, sgd, yogi } from "../optimizers/optimizers.js";
import { constantSchedule, cosineDecay, exponentialDecay, warmupCosineDecay } from "../optimizers/schedules.js";
import { chain, type PlacedSchedule } from "../optimizers/transform.js";
import type { RunConfig } from "./config.js";

type Rate = Parameters<ClientOptimizer>[0];

type OptimizerName = NonNullable<RunConfig["clientOptimizer"]>;
interface OptimizerSettings {
  readonly momentum: number;
  readonly b1?: number | undefined;
  readonly b2?: number | undefined;
  readonly weightDecay?: number | undefined;
}

/** The library's optimiser an option names, made from the round's learning rate. */
function namedOptimizer(name: OptimizerName, { momentum, b1, b2, weightDecay }: OptimizerSettings): ClientOptimizer {
  // An undefined setting leaves the library's default (the options give all three to the clients' optimiser).
  const moments = { ...(b1 === undefined ? {} : { b1 }), ...(b2 === undefined ? {} : { b2 }) };
  const make: Record<OptimizerName, ClientOptimizer> = {
    sgd: (lr: Rate) => sgd(lr),
    momentum: (lr: Rate) => sgd(lr, { momentum }),
    nesterov: (lr: Rate) => sgd(lr, { momentum, nesterov: true }),
    adam: (lr: Rate) => adam(lr, moments),
    adamw: (lr: Rate) => adamw(lr, { ...moments, ...(weightDecay === undefined ? {} : { weightDecay }) }),
    yogi: (lr: Rate) => yogi(lr, moments),
    adagrad: (lr: Rate) => adagrad(lr),
    rmsprop: (lr: Rate) => rmsprop(lr),
  };
  return make[name]!;
}

/** The clients' optimiser the options ask for, or undefined where the algorithm trains no clients locally. */
export function clientOptimizerFor(config: RunConfig): ClientOptimizer | undefined {
  if (config.clientOptimizer === undefined) return undefined;
  const settings = { momentum: config.clientMomentum ?? 0.9, b1: config.clientBeta1, b2: config.clientBeta2, weightDecay: config.weightDecay };
  const optimizer = namedOptimizer(config.clientOptimizer, settings);
  const clipNorm = config.clipNorm ?? 0;
  return clipNorm === 0 ? optimizer : (lr: Rate) => chain(clipByGlobalNorm(clipNorm), optimizer(lr));
}

/** The client optimiser the options ask for, as the algorithms' options take it: `{ clientOptimizer }`, or nothing. */
export function clientTraining(config: RunConfig): { clientOptimizer?: ClientOptimizer } {
  const clientOptimizer = clientOptimizerFor(config);
  return clientOptimizer === undefined ? {} : { clientOptimizer };
}

/** Mime's base optimiser (--mime-optimizer, --mime-momentum), with the library's defaults otherwise. */
export function mimeBaseOptimizerFor(config: RunConfig): ClientOptimizer {
  return namedOptimizer(config.mimeOptimizer ?? "momentum", { momentum: config.mimeMomentum ?? 0.9 });
}

/** --lr scheduled over the rounds as the options say. */
function roundSchedule(config: RunConfig): PlacedSchedule {
  const alpha = config.minLrFraction ?? 0;
  switch (config.lrSchedule) {
    case "constant":
      return constantSchedule(config.lr);
    case "exponential":
    case "step":
      return exponentialDecay(config.lr, {
        transitionSteps: config.decayRounds ?? 10,
        decayRate: config.decayRate ?? 0.5,
        staircase: config.lrSchedule === "step",
      });
    case "cosine":
      return cosineDecay(config.lr, { decaySteps: config.rounds, alpha });
    case "warmup-cosine":
      return warmupCosineDecay(config.lr, { warmupSteps: config.warmupRounds ?? 5, decaySteps: config.rounds, alpha });
  }
}

/** Each round's client learning rate (the server's for FedSGD, whose `lr` is the server's step). */
export function roundLearningRates(config: RunConfig): (round: number) => number {
  const schedule = roundSchedule(config);
  const evaluate = program({ count: f32([]) }, ({ count }) => ({ lr: schedule(count) }));
  return (round) => (interpret(evaluate.ir, { count: round - 1 }) as { lr: OutputLeaf }).lr.data[0]!;
}
