/**
 * Recipes: the random data a generated program is built from, and their fast-check
 * arbitraries. A recipe says which operations to apply in which order, with small integers
 * choosing operands, axes and shapes; the builder (steps.ts) reads them so that every recipe
 * makes a well-typed program. Shrinking a recipe (dropping steps, moving integers towards 0)
 * therefore shrinks the program and keeps it well typed.
 */
import fc from "fast-check";

/** The ops of issue 24 point 4 (math-steps.ts builds them). */
export const mathOps = ["square", "softplus", "log1p", "floor", "round", "mod", "argmin", "norm", "squaredDistance", "sigmoidCrossEntropy", "binaryCrossEntropy"] as const;
/** Operations that work on any value: elementwise, reductions over axes, shapes, linear algebra. */
export const tensorOps = [
  "add", "sub", "mul", "div", "maximum", "minimum", "where", "neg", "tanh", "sin", "cos", "sigmoid", "relu", "abs", "exp", "log",
  "sqrt", "pow", "scale", "clip", "softmax", "logSoftmax", "logsumexp", "cumsum", "take", "sort", "layerNorm", "groupNorm", "sum", "mean", "max", "min", "matmul", "transpose",
  "reshape", "expandDims", "concat", "stack", "slice", ...mathOps,
] as const;
/** Loops, whose body is a recipe of its own. */
const loopOps = ["scan", "fori"] as const;
/** Differentiation of a generated scalar function. */
const gradOps = ["valueAndGrad", "grad"] as const;
/** Placement primitives; the body of map is a recipe of its own. */
const federatedOps = ["broadcast", "reduceSum", "reduceMean", "reduceMax", "reduceMin", "reduceWeightedMean", "aggregate"] as const;

export type OpName = (typeof tensorOps)[number] | (typeof loopOps)[number] | (typeof gradOps)[number] | (typeof federatedOps)[number] | "map";

export interface Step {
  readonly op: OpName;
  /** Chooses the main operand, counting back from the newest value. */
  readonly a: number;
  /** Chooses a second operand, where the operation takes one. */
  readonly b: number;
  /** Chooses the operation's variant: axes, a shape, a constant. */
  readonly k: number;
  /** The steps of the operation's function (map, loops, grad). */
  readonly body: readonly Step[];
}

/** Forward programs: inputs at the server and the clients, then steps at top level. */
export interface ProgramRecipe {
  readonly clients: number;
  readonly server: readonly (readonly number[])[];
  readonly clientData: readonly (readonly number[])[];
  readonly steps: readonly Step[];
  /** Seeds the input data. */
  readonly dataSeed: number;
}

/** Gradient programs: the steps compute a scalar loss of the server parameters. */
export interface GradientRecipe extends ProgramRecipe {
  /** valueAndGrad (true) or grad (false). */
  readonly withValue: boolean;
}

const shapeArb = (maxRank: number, maxDim = 4): fc.Arbitrary<number[]> => fc.array(fc.integer({ min: 1, max: maxDim }), { maxLength: maxRank });

const choice = fc.nat(0xffff);

interface StepOptions {
  /** Placement primitives and map are allowed (top level, and loops at top level). */
  readonly federated: boolean;
  /** How many levels of function bodies may still nest. */
  readonly depth: number;
  readonly maxSteps: number;
  /**
   * How many times the steps are differentiated: a grad's body once more than the code around
   * it. aggregate has a gradient but no second one, so it is left out from 2 on.
   */
  readonly differentiations: number;
}

function stepsArb(options: StepOptions): fc.Arbitrary<Step[]> {
  const flat = (ops: readonly OpName[]) => fc.record({ op: fc.constantFrom(...ops), a: choice, b: choice, k: choice, body: fc.constant([]) });
  const federated = options.differentiations >= 2 ? federatedOps.filter((op) => op !== "aggregate") : federatedOps;
  const arbitraries: fc.WeightedArbitrary<Step>[] = [{ arbitrary: flat(tensorOps), weight: 6 }];
  if (options.federated) arbitraries.push({ arbitrary: flat(federated), weight: 3 });
  if (options.depth > 0) {
    const inner = { ...options, depth: options.depth - 1, maxSteps: 4 };
    const withBody = (ops: readonly OpName[], body: StepOptions) =>
      fc.record({ op: fc.constantFrom(...ops), a: choice, b: choice, k: choice, body: stepsArb(body) });
    arbitraries.push({ arbitrary: withBody(loopOps, inner), weight: 1 });
    arbitraries.push({ arbitrary: withBody(gradOps, { ...inner, differentiations: options.differentiations + 1 }), weight: 1 });
    if (options.federated) arbitraries.push({ arbitrary: withBody(["map"], { ...inner, federated: false }), weight: 3 });
  }
  return fc.array(fc.oneof(...arbitraries), { minLength: 1, maxLength: options.maxSteps });
}

function recipeFields(differentiable: boolean, serverShape: fc.Arbitrary<number[]>) {
  return {
    clients: fc.integer({ min: 1, max: 4 }),
    server: fc.array(serverShape, { minLength: 1, maxLength: 2 }),
    clientData: fc.array(shapeArb(3), { minLength: 1, maxLength: 2 }),
    steps: stepsArb({ federated: true, depth: 2, maxSteps: 6, differentiations: differentiable ? 1 : 0 }),
    dataSeed: fc.nat(),
  };
}

export const programRecipe: fc.Arbitrary<ProgramRecipe> = fc.record(recipeFields(false, shapeArb(3)));

/** Parameters have at most 9 entries each, so that finite differences (two losses per entry) stay cheap. */
export const gradientRecipe: fc.Arbitrary<GradientRecipe> = fc.record({ ...recipeFields(true, shapeArb(2, 3)), withValue: fc.boolean() });
