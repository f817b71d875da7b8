/**
 * Near ties: where a program compares two values (maximum, minimum, the comparisons, sort's
 * entries among themselves, and relu, abs or sign against zero) whose float64 values are within float32 rounding of each
 * other, float32 and float64 may decide differently, and a minimum's gradient, say, goes to
 * the other operand; likewise floor, round and mod of a value within rounding of a jump. Such a program has no single right float32 answer, so when the paths
 * disagree on one the tests discard it (and count it) instead of reporting a bug.
 */
import { interpret } from "../../src/interpret/reference.js";
import { broadcastPosition, forEachIndex, type Tensor } from "../../src/interpret/tensor.js";
import type { GeneratedProgram } from "./programs.js";

/** Relative distance under which two float32 results may be ordered either way. */
const NEAR = 1e-5;

const BINARY = new Set(["maximum", "minimum", "less", "less_equal", "greater", "greater_equal", "equal", "not_equal"]);
const AGAINST_ZERO = new Set(["relu", "abs", "sign"]);

/**
 * The piecewise-constant primitives, each as values that jump where they cross an integer:
 * floor's argument, round's argument + 1/2, and mod's a / b (broadcast over a's entries, the
 * divisor being b's first entry or a's partner entry; all pairs are taken, to be safe).
 */
const JUMPS: Record<string, (inputs: readonly Tensor[]) => number[]> = {
  floor: ([x]) => Array.from(x!.data),
  round: ([x]) => Array.from(x!.data, (v) => v + 0.5),
  mod: ([a, b]) => Array.from(a!.data).flatMap((v) => Array.from(b!.data, (d) => v / d)),
};
const nearInteger = (v: number): boolean => Number.isFinite(v) && Math.abs(v - Math.round(v)) <= NEAR * Math.max(1, Math.abs(v));

const near = (a: number, b: number): boolean => Math.abs(a - b) <= NEAR * Math.max(1, Math.abs(a), Math.abs(b));

/** Whether two entries of x nearly tie (sort compares entries of a lane; any two are taken, to be safe). */
function entriesNearlyTie(x: Tensor): boolean {
  const sorted = Array.from(x.data).sort((a, b) => a - b);
  return sorted.some((v, i) => i > 0 && near(sorted[i - 1]!, v));
}

/** Whether some element pair of a and b (broadcast to `shape`) nearly ties. */
function pairsNearlyTie(a: Tensor, b: Tensor, shape: readonly number[]): boolean {
  const at = broadcastPosition(a.shape, shape);
  const bt = broadcastPosition(b.shape, shape);
  let found = false;
  forEachIndex(shape, (index) => {
    found ||= near(a.data[at(index)]!, b.data[bt(index)]!);
  });
  return found;
}

/** The first comparison in g's reference run whose operands nearly tie, described, or undefined. */
export function nearTie(g: GeneratedProgram): string | undefined {
  let found: string | undefined;
  interpret(g.program.ir, g.inputs, {
    clients: g.clients,
    observe: (op, inputs, output) => {
      if (found !== undefined) return;
      if (BINARY.has(op) && pairsNearlyTie(inputs[0]!, inputs[1]!, output.shape)) found = `${op} of operands within ${NEAR} of each other`;
      if ((op === "sort" || op === "argmax") && entriesNearlyTie(inputs[0]!)) found = `${op} of entries within ${NEAR} of each other`;
      if (JUMPS[op] !== undefined && JUMPS[op](inputs).some((v) => nearInteger(v))) found = `${op} of a value within ${NEAR} of a jump`;
      if (AGAINST_ZERO.has(op) && inputs[0]!.data.some((x) => Math.abs(x) <= NEAR)) found = `${op} of a value within ${NEAR} of 0`;
    },
  });
  return found;
}
