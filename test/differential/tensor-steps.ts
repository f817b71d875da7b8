/**
 * Generated steps of the tensor operations: elementwise, reductions over axes, softmax, shape
 * operations and matmul. Each reads its operands from the scope (at any placement: server,
 * clients outside map, members inside it) and picks partners that fit, so every step is well
 * typed. Bounds keep entries small enough for float32 to stay accurate: operands are scaled
 * by powers of two before operations that amplify, exp only sees |x| <= 2 and log and sqrt
 * only see x*x + c > 0.
 */
import { call, fieldOf, sideOf, sizeOf, type Expr, type Scope, type Val } from "./expr.js";
import type { mathOps, Step, tensorOps } from "./recipe.js";
import { broadcastShape, matmulShape, permutation, reshapeTargets, sameShape, variant } from "./shapes.js";

export type TensorStep = (scope: Scope, x: Val, step: Step) => void;

const shapeOf = (v: Val): readonly number[] => v.value.shape;
const rankOf = (v: Val): number => v.value.shape.length;
const MAX_RANK = 4;

/** A value at x's side chosen by `pick` among those whose shape passes `fits`. */
export const partner = (scope: Scope, x: Val, pick: number, fits: (shape: readonly number[]) => boolean): Val | undefined =>
  scope.choose(pick, (v) => sideOf(v) === sideOf(x) && fits(shapeOf(v)));

/** x's partner for an elementwise operation: any value at its side, averaged to a scalar when the shapes do not broadcast. */
export function elementwisePartner(scope: Scope, x: Val, pick: number, limit: number): { y: Expr; bound: number } {
  const chosen = scope.tame(partner(scope, x, pick, () => true) ?? x, limit);
  const fits = broadcastShape(shapeOf(x), shapeOf(chosen)) !== undefined;
  return { y: fits ? chosen : call("mean", chosen), bound: chosen.bound };
}

function binary(name: "add" | "sub" | "mul" | "maximum" | "minimum", limit: number, bound: (bx: number, by: number) => number): TensorStep {
  return (scope, x, step) => {
    const a = scope.tame(x, limit);
    const { y, bound: by } = elementwisePartner(scope, a, step.b, limit);
    scope.emit(call(name, a, y), bound(a.bound, by));
  };
}

function unary(name: "neg" | "tanh" | "sigmoid", bound: (bx: number) => number): TensorStep {
  return (scope, x) => void scope.emit(call(name, x), bound(x.bound));
}

/**
 * relu and abs with their kink moved from 0 to x = 0.3. Values that are 0 in exact arithmetic
 * are common (gradients of constant functions, cancellations) and come out as rounding noise
 * of either sign, so a kink at 0 would make the derivative a coin toss; no generated value is
 * 0.3 in exact arithmetic.
 */
function kinked(name: "relu" | "abs"): TensorStep {
  return (scope, x) => void scope.emit(call(name, call("sub", x, 0.3)), x.bound + 0.3);
}

/** x*x + c: positive, for log, sqrt and pow. */
const squarePlus = (x: Val, c: number): Expr => call("add", call("mul", x, x), c);

/** An axis of a rank-`rank` tensor, or undefined for the default: counted from either end. */
export function axisChoice(k: number, rank: number): number | undefined {
  const choice = variant(k, 0, 2 * rank + 1);
  if (choice === 0) return undefined;
  return choice <= rank ? choice - 1 : choice - 1 - 2 * rank;
}

/** softmax and logSoftmax, along an axis; a scalar first becomes a vector of one. */
function softmaxLike(name: "softmax" | "logSoftmax", limit: number): TensorStep {
  return (scope, x, step) => {
    const a = scope.tame(x, limit);
    const input = rankOf(a) === 0 ? call("expandDims", a, 0) : a;
    const axis = axisChoice(step.k, Math.max(rankOf(a), 1));
    const bound = name === "softmax" ? 1 : 2 * a.bound + Math.log(sizeOf(shapeOf(a)) + 1);
    scope.emit(axis === undefined ? call(name, input) : call(name, input, axis), bound);
  };
}

/** Axes of a reduction: all, one (as a number or a list, from either end) or two. */
export function reductionAxes(k: number, rank: number): number | number[] | undefined {
  if (rank === 0) return undefined;
  const first = variant(k, 1, rank);
  const signed = variant(k, 3, 2) === 1 ? first - rank : first;
  switch (variant(k, 0, 4)) {
    case 0:
      return undefined;
    case 1:
      return signed;
    case 2:
      return [signed];
    default:
      return rank < 2 ? [signed] : [first, (first + 1 + variant(k, 4, rank - 1)) % rank];
  }
}

function reduction(name: "sum" | "mean" | "max" | "min"): TensorStep {
  return (scope, x, step) => {
    const shape = shapeOf(x);
    const axes = reductionAxes(step.k, shape.length);
    const keepDims = variant(step.k, 2, 2) === 1;
    const reduced = axes === undefined ? shape : (typeof axes === "number" ? [axes] : axes).map((a) => shape.at(a)!);
    const bound = name === "sum" ? x.bound * sizeOf(reduced) : x.bound;
    const expr = keepDims ? call(name, x, axes, true) : axes === undefined ? call(name, x) : call(name, x, axes);
    scope.emit(expr, bound);
  };
}

/** logsumexp over the axes of a reduction: at most the max plus the log of the count. */
const logsumexp: TensorStep = (scope, x, step) => {
  const a = scope.tame(x, 16);
  const shape = shapeOf(a);
  const axes = reductionAxes(step.k, shape.length);
  const keepDims = variant(step.k, 2, 2) === 1;
  const expr = keepDims ? call("logsumexp", a, axes, true) : axes === undefined ? call("logsumexp", a) : call("logsumexp", a, axes);
  scope.emit(expr, a.bound + Math.log(sizeOf(shape) + 1));
};

/** Running sums along an axis, in each direction, inclusive or not; a scalar first becomes a vector of one. */
const cumsum: TensorStep = (scope, x, step) => {
  const a = scope.tame(x, 4);
  const input = rankOf(a) === 0 ? call("expandDims", a, 0) : a;
  const shape = rankOf(a) === 0 ? [1] : shapeOf(a);
  const axis = axisChoice(step.k, shape.length);
  const options = { exclusive: variant(step.k, 3, 2) === 1, reverse: variant(step.k, 4, 2) === 1 };
  const bound = a.bound * shape.at(axis ?? -1)!;
  scope.emit(variant(step.k, 5, 2) === 1 ? call("cumsum", input, axis ?? -1, options) : call("cumsum", input, axis), bound);
};

/**
 * A lookup of rows along an axis by int32 indices, some outside [0, n) (rows of zeros): a
 * constant list or table of them, and inside a map over differing members each client's own
 * (the constants plus its clientIndex()), so that batching meets shared and per-client indices, tables or both.
 */
const take: TensorStep = (scope, x, step) => {
  const input = rankOf(x) === 0 ? call("expandDims", x, 0) : x;
  const shape = rankOf(x) === 0 ? [1] : shapeOf(x);
  const axis = axisChoice(step.k, shape.length) ?? 0;
  const n = shape.at(axis)!;
  const count = 1 + variant(step.b, 0, 3);
  // -1 to n: n and -1 are outside.
  const rows = Array.from({ length: count }, (_, i) => variant(step.b, i + 1, n + 2) - 1);
  const listed = variant(step.k, 3, 2) === 1 ? call("constant", [rows, rows], "int32") : call("constant", rows, "int32");
  const indices = scope.membersDiffer && variant(step.k, 4, 2) === 1 ? call("add", listed, call("clientIndex")) : listed;
  scope.emit(call("take", input, indices, axis), x.bound);
};

/**
 * sort along an axis either way, topk's values (the last axis), and argsort's or topk's
 * positions as f32 (no gradient); a scalar first becomes a vector of one.
 */
const sort: TensorStep = (scope, x, step) => {
  const input = rankOf(x) === 0 ? call("expandDims", x, 0) : x;
  const shape = rankOf(x) === 0 ? [1] : shapeOf(x);
  const axis = axisChoice(step.k, shape.length) ?? -1;
  const descending = variant(step.k, 3, 2) === 1;
  const k = 1 + variant(step.b, 0, shape.at(-1)!);
  const topk = call("topk", input, k);
  const forms = [
    () => scope.emit(call("sort", input, axis, descending), x.bound),
    () => scope.emit(call("cast", call("argsort", input, axis, descending), "float32"), shape.at(axis)!),
    () => scope.emit(fieldOf(topk, "values"), x.bound),
    () => scope.emit(call("cast", fieldOf(topk, "indices"), "float32"), shape.at(-1)!),
  ];
  forms[[0, 0, 1, 2, 3][variant(step.k, 4, 5)]!]!();
};

/** A scale or shift for a normalization of `shape`: a value at x's side that broadcasts to exactly that shape, else one averaged to a scalar. */
function scaleFor(scope: Scope, x: Val, shape: readonly number[], pick: number): { y: Expr; bound: number } {
  const chosen = scope.tame(partner(scope, x, pick, () => true) ?? x, 4);
  const fits = sameShape(broadcastShape(shape, shapeOf(chosen)) ?? [], shape);
  return { y: fits ? chosen : call("mean", chosen), bound: chosen.bound };
}

/**
 * layerNorm over the last axis with a scale and a shift from the scope (averaged to scalars
 * when they do not broadcast). eps is large: a lane of nearly equal entries has a variance near
 * 0, and 1 / sqrt(var + eps) would amplify float32's rounding of the centred entries past the
 * comparison's tolerance; the reference tests check the default eps.
 */
const layerNorm: TensorStep = (scope, x, step) => {
  const input = rankOf(x) === 0 ? call("expandDims", x, 0) : x;
  const n = rankOf(x) === 0 ? 1 : shapeOf(x).at(-1)!;
  const shape = rankOf(x) === 0 ? [1] : shapeOf(x);
  const [gamma, beta] = [scaleFor(scope, x, shape, step.b), scaleFor(scope, x, shape, Math.floor(step.b / 7))];
  const eps = [0.25, 1][variant(step.k, 0, 2)]!;
  scope.emit(call("layerNorm", input, gamma.y, beta.y, eps), Math.sqrt(n) * gamma.bound + beta.bound);
};

/** groupNorm of x as [N, ..., C] (a unit N added below rank 2) in a number of groups dividing C; scale and shift as layerNorm's. */
const groupNorm: TensorStep = (scope, x, step) => {
  const input = rankOf(x) >= 2 ? x : rankOf(x) === 1 ? call("expandDims", x, 0) : call("reshape", x, [1, 1]);
  const shape = rankOf(x) >= 2 ? shapeOf(x) : [1, ...shapeOf(x), 1].slice(-2);
  const channels = shape.at(-1)!;
  const divisors = [...Array(channels).keys()].map((i) => i + 1).filter((g) => channels % g === 0);
  const groups = divisors[variant(step.k, 1, divisors.length)]!;
  const [gamma, beta] = [scaleFor(scope, x, shape, step.b), scaleFor(scope, x, shape, Math.floor(step.b / 7))];
  const size = (shape.slice(1).reduce((a, b) => a * b, 1) / channels) * (channels / groups);
  scope.emit(call("groupNorm", input, gamma.y, beta.y, groups, [0.25, 1][variant(step.k, 0, 2)]!), Math.sqrt(size) * gamma.bound + beta.bound);
};

/** x with its last two axes swapped. */
const swapLastTwo = (x: Val): Expr => {
  const perm = [...Array(rankOf(x)).keys()];
  perm.splice(-2, 2, perm.length - 1, perm.length - 2);
  return call("transpose", x, perm);
};

/** matmul with a partner whose shape fits (numpy rules), else with x's own transpose. */
const matmul: TensorStep = (scope, x, step) => {
  const a = scope.tame(x, 4);
  const inner = (shape: readonly number[]) => shape[shape.length - 1] ?? 1;
  if (rankOf(a) === 0) {
    scope.emit(call("matmul", call("expandDims", a, 0), call("expandDims", a, 0)), a.bound * a.bound);
    return;
  }
  const found = partner(scope, a, step.b, (shape) => matmulShape(shapeOf(a), shape) !== undefined);
  const b = found === undefined ? undefined : scope.tame(found, 4);
  if (b !== undefined) scope.emit(call("matmul", a, b), inner(shapeOf(a)) * a.bound * b.bound);
  else scope.emit(call("matmul", a, rankOf(a) === 1 ? a : swapLastTwo(a)), inner(shapeOf(a)) * a.bound * a.bound);
};

const transpose: TensorStep = (scope, x, step) => {
  const rank = rankOf(x);
  const explicit = rank >= 2 && variant(step.k, 0, 2) === 1;
  scope.emit(explicit ? call("transpose", x, permutation(rank, Math.floor(step.k / 5))) : call("transpose", x), x.bound);
};

const reshape: TensorStep = (scope, x, step) => {
  const targets = reshapeTargets(shapeOf(x));
  scope.emit(call("reshape", x, targets[step.k % targets.length]!), x.bound);
};

const expandDims: TensorStep = (scope, x, step) => {
  const rank = rankOf(x);
  if (rank >= MAX_RANK) return reshape(scope, x, step);
  const axis = variant(step.k, 0, rank + 1);
  scope.emit(call("expandDims", x, variant(step.k, 1, 2) === 1 ? axis - rank - 1 : axis), x.bound);
};

/** concat along an axis with a partner whose other dims agree, else with tanh(x). */
const concat: TensorStep = (scope, x, step) => {
  const rank = rankOf(x);
  if (rank === 0) return stack(scope, x, step);
  const axis = variant(step.k, 0, rank);
  const agrees = (shape: readonly number[]) => shape.length === rank && shape.every((d, i) => i === axis || d === shapeOf(x)[i]);
  const y = partner(scope, x, step.b, agrees);
  const parts: Expr[] = y === undefined ? [x, call("tanh", x)] : [x, y];
  if (variant(step.k, 1, 2) === 1) parts.push(x);
  const signedAxis = variant(step.k, 2, 2) === 1 ? axis - rank : axis;
  scope.emit(call("concat", parts, signedAxis), Math.max(x.bound, y?.bound ?? 1));
};

const stack: TensorStep = (scope, x, step) => {
  const rank = rankOf(x);
  if (rank >= MAX_RANK) return reshape(scope, x, step);
  const y = partner(scope, x, step.b, (shape) => sameShape(shape, shapeOf(x))) ?? x;
  scope.emit(call("stack", [x, y], variant(step.k, 0, rank + 1)), Math.max(x.bound, y.bound));
};

/** A block of x: per axis a start and a size (or -1, the rest). */
const slice: TensorStep = (scope, x, step) => {
  const shape = shapeOf(x);
  if (shape.length === 0) {
    scope.emit(call("slice", call("expandDims", x, 0), [0], [1]), x.bound);
    return;
  }
  const begin = shape.map((d, i) => variant(step.k, i, d));
  const size = shape.map((d, i) => (variant(step.b, i, 3) === 0 ? -1 : 1 + variant(step.b, i + 3, d - begin[i]!)));
  scope.emit(call("slice", x, begin, size), x.bound);
};

export const tensorSteps: Record<Exclude<(typeof tensorOps)[number], (typeof mathOps)[number]>, TensorStep> = {
  add: binary("add", 16, (a, b) => a + b),
  sub: binary("sub", 16, (a, b) => a + b),
  mul: binary("mul", 4, (a, b) => a * b),
  maximum: binary("maximum", 16, Math.max),
  minimum: binary("minimum", 16, Math.max),
  div: (scope, x, step) => {
    const { y } = elementwisePartner(scope, x, step.b, 4);
    const a = scope.tame(x, 16);
    scope.emit(call("div", a, call("add", call("mul", y, y), 0.5)), 2 * a.bound);
  },
  // The condition compares with 0.3, which no input (a multiple of 1/16) equals, so that rounding rarely flips a branch.
  where: (scope, x, step) => {
    const a = scope.tame(x, 16);
    const { y, bound } = elementwisePartner(scope, a, step.b, 16);
    scope.emit(call("where", call("greater", y, 0.3), a, y), Math.max(a.bound, bound));
  },
  neg: unary("neg", (b) => b),
  tanh: unary("tanh", () => 1),
  sigmoid: unary("sigmoid", () => 1),
  // Arguments kept small: float32 backends reduce large ones to [-pi, pi] with different errors.
  sin: (scope, x) => void scope.emit(call("sin", scope.tame(x, 8)), 1),
  cos: (scope, x) => void scope.emit(call("cos", scope.tame(x, 8)), 1),
  relu: kinked("relu"),
  abs: kinked("abs"),
  exp: (scope, x) => void scope.emit(call("exp", scope.tame(x, 2)), Math.exp(2)),
  log: (scope, x) => void scope.emit(call("log", squarePlus(scope.tame(x, 4), 0.5)), Math.log(16.5)),
  sqrt: (scope, x) => {
    const a = scope.tame(x, 8);
    scope.emit(call("sqrt", squarePlus(a, 0.25)), a.bound + 0.5);
  },
  pow: (scope, x, step) => {
    const exponent = [2, 0.5, 1.5, -1][variant(step.k, 0, 4)]!;
    scope.emit(call("pow", squarePlus(scope.tame(x, 2), 0.5), exponent), Math.max(0.5 ** exponent, 4.5 ** exponent));
  },
  // A constant on either side of the operation.
  scale: (scope, x, step) => {
    const c = [0.5, -1.5, 2, 0.75][variant(step.k, 1, 4)]!;
    const forms = [
      () => scope.emit(call("mul", x, c), x.bound * Math.abs(c)),
      () => scope.emit(call("add", x, c), x.bound + Math.abs(c)),
      () => scope.emit(call("sub", c, x), x.bound + Math.abs(c)),
      () => scope.emit(call("mul", c, x), x.bound * Math.abs(c)),
    ];
    forms[variant(step.k, 0, forms.length)]!();
  },
  clip: (scope, x, step) => {
    // Bounds no generated value reaches in exact arithmetic (see kinked).
    const [lo, hi] = ([[-1.1, 0.7], [0.15, 0.85], [-1.7, 1.3]] as const)[variant(step.k, 0, 3)]!;
    scope.emit(call("clip", x, lo, hi), Math.max(Math.abs(lo), Math.abs(hi)));
  },
  softmax: softmaxLike("softmax", 8),
  logSoftmax: softmaxLike("logSoftmax", 4),
  logsumexp,
  cumsum,
  take,
  sort,
  layerNorm,
  groupNorm,
  sum: reduction("sum"),
  mean: reduction("mean"),
  max: reduction("max"),
  min: reduction("min"),
  matmul,
  transpose,
  reshape,
  expandDims,
  concat,
  stack,
  slice,
};
