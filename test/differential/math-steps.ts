/**
 * Generated steps of the ops of issue 24 point 4, in the manner of tensor-steps.ts. The
 * piecewise ones have their jumps moved off the values programs compute exactly: floor jumps
 * at integers and is given x - 0.3, round at halves and is given x - 0.3, mod at multiples of
 * its divisor and is given x - 0.3 (inputs are multiples of 1/16, so exact values never sit on
 * a jump); a computed value that lands within rounding of a jump is a near tie (ties.ts).
 * Norms shift by 0.3 as well, so that no lane is all zeros (the 2-norm's gradient is NaN there).
 */
import { call, sizeOf, type Val } from "./expr.js";
import type { mathOps } from "./recipe.js";
import { broadcastShape, variant } from "./shapes.js";
import { axisChoice, elementwisePartner, partner, reductionAxes, type TensorStep } from "./tensor-steps.js";

const shapeOf = (v: Val): readonly number[] => v.value.shape;

/** x - 0.3: off every value a program computes exactly (see above). */
const shifted = (x: Val) => call("sub", x, 0.3);

/** x as a tensor of rank 1 or more (a scalar becomes a vector of one), with that shape. */
const atLeastVector = (x: Val) => (shapeOf(x).length === 0 ? { input: call("expandDims", x, 0), shape: [1] } : { input: x, shape: shapeOf(x) });

/** The entries a reduction over `axes` of `shape` adds up. */
const reducedCount = (shape: readonly number[], axes: number | number[] | undefined) =>
  axes === undefined ? sizeOf(shape) : (typeof axes === "number" ? [axes] : axes).reduce((n, a) => n * shape.at(a)!, 1);

/** norm of each order over the axes of a reduction, with keepDims or not. */
const norm: TensorStep = (scope, x, step) => {
  const shape = shapeOf(x);
  const axes = reductionAxes(step.k, shape.length);
  const ord = [2, 1, Infinity][variant(step.k, 5, 3)]!;
  const keepDims = variant(step.k, 2, 2) === 1;
  const options = { ...(ord === 2 ? {} : { ord }), ...(axes === undefined ? {} : { axis: axes }), ...(keepDims ? { keepDims } : {}) };
  const n = reducedCount(shape, axes);
  const bound = (x.bound + 0.3) * (ord === 1 ? n : ord === 2 ? Math.sqrt(n) : 1);
  scope.emit(Object.keys(options).length === 0 ? call("norm", shifted(x)) : call("norm", shifted(x), options as never), bound);
};

/** squaredDistance with a partner at x's side (its mean when the shapes do not broadcast), over the axes of a reduction. */
const squaredDistance: TensorStep = (scope, x, step) => {
  const a = scope.tame(x, 4);
  const chosen = scope.tame(partner(scope, a, step.b, () => true) ?? a, 4);
  const both = broadcastShape(shapeOf(a), shapeOf(chosen));
  const b = both === undefined ? call("mean", chosen) : chosen;
  const shape = both ?? shapeOf(a);
  const axes = reductionAxes(step.k, shape.length);
  const bound = reducedCount(shape, axes) * (a.bound + chosen.bound) ** 2;
  scope.emit(axes === undefined ? call("squaredDistance", a, b) : call("squaredDistance", a, b, axes, variant(step.k, 2, 2) === 1), bound);
};

/** A divisor: a constant of either sign, or a partner's y*y + 0.5 (positive, both operands then get gradients). */
const mod: TensorStep = (scope, x, step) => {
  const a = scope.tame(x, 16);
  const constant = [1.5, -0.75, 2.5][variant(step.k, 1, 3)]!;
  if (variant(step.k, 0, 2) === 0) {
    scope.emit(call("mod", shifted(a), constant), Math.abs(constant));
    return;
  }
  const { y, bound } = elementwisePartner(scope, a, step.b, 2);
  scope.emit(call("mod", shifted(a), call("add", call("mul", y, y), 0.5)), bound * bound + 0.5);
};

/** The two losses of a value and a partner's sigmoid as labels, over the last axis. */
function loss(name: "sigmoidCrossEntropy" | "binaryCrossEntropy"): TensorStep {
  return (scope, x, step) => {
    const a = scope.tame(x, 8);
    const { input, shape } = atLeastVector(a);
    const chosen = partner(scope, a, step.b, (s) => broadcastShape(shape, s) !== undefined && s.length <= shape.length) ?? a;
    const labels = call("sigmoid", chosen);
    // Probabilities sigmoid(a) with |a| <= 8 stay inside binaryCrossEntropy's clip [1e-7, 1 - 1e-7].
    const first = name === "binaryCrossEntropy" ? call("sigmoid", input) : input;
    scope.emit(call(name, first, labels), a.bound + 1);
  };
}

export const mathSteps: Record<(typeof mathOps)[number], TensorStep> = {
  square: (scope, x) => {
    const a = scope.tame(x, 4);
    scope.emit(call("square", a), a.bound * a.bound);
  },
  softplus: (scope, x) => {
    const a = scope.tame(x, 16);
    scope.emit(call("softplus", a), a.bound + Math.LN2);
  },
  // log1p of x*x (>= 0) or of tanh(x)/2 (in (-1/2, 1/2)), where its accuracy near 0 shows.
  log1p: (scope, x, step) => {
    const a = scope.tame(x, 4);
    const argument = variant(step.k, 0, 2) === 0 ? call("mul", a, a) : call("mul", call("tanh", a), 0.5);
    scope.emit(call("log1p", argument), Math.log1p(a.bound * a.bound) + 1);
  },
  floor: (scope, x) => void scope.emit(call("floor", shifted(x)), x.bound + 1.3),
  round: (scope, x) => void scope.emit(call("round", shifted(x)), x.bound + 1.3),
  mod,
  // argmin's positions as f32 (no gradient), along an axis; a scalar first becomes a vector of one.
  argmin: (scope, x, step) => {
    const { input, shape } = atLeastVector(x);
    const axis = axisChoice(step.k, shape.length);
    scope.emit(call("cast", axis === undefined ? call("argmin", input) : call("argmin", input, axis), "float32"), shape.at(axis ?? -1)!);
  },
  norm,
  squaredDistance,
  sigmoidCrossEntropy: loss("sigmoidCrossEntropy"),
  binaryCrossEntropy: loss("binaryCrossEntropy"),
};
