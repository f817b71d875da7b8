/**
 * einsum() equations at trace time: parsing and the checks of types/einsum.ts, in the same
 * order and with the same texts (FT212 for the equation, FT213 for an index sized two ways).
 */
import { ftError } from "../errors/error.js";
import { printDim } from "../ir/print.js";
import { dimsAgree } from "../ir/shapes.js";
import type { DimValue } from "../ir/types.js";

/** One operand as the checks see it: its dims and its printed type. */
export interface EinsumOperand {
  readonly shape: readonly DimValue[];
  readonly printed: string;
}

/** A checked equation: the index letters of each operand and of the output. */
export interface Equation {
  readonly inputs: readonly string[][];
  readonly output: string[];
}

const isLetter = (c: string) => /^[a-zA-Z]$/.test(c);
const operandName = (i: number) => (i === 0 ? "the first operand" : "the second operand");

function termProblem(equation: string, term: string, what: string): string | undefined {
  if (equation.includes("...")) return "uses '...': ellipsis is not supported, name every axis with a letter";
  const chars = [...term];
  const bad = chars.find((c) => !isLetter(c));
  if (bad !== undefined) return `has '${bad}' in ${what}: indices are the letters a-z and A-Z`;
  const repeated = chars.find((c, i) => chars.indexOf(c, i + 1) >= 0);
  if (repeated !== undefined) return `repeats index ${repeated} in ${what}: diagonals and traces are not supported`;
  return undefined;
}

/**
 * The equation with its output written out: without "->", numpy's implicit output, the letters
 * that occur once in alphabetical order (by character code, so capitals first).
 */
function explicit(equation: string): string {
  if (equation.includes("->")) return equation;
  const chars = [...equation];
  const once = [...new Set(chars)].filter((c) => isLetter(c) && chars.indexOf(c) === chars.lastIndexOf(c));
  return `${equation}->${once.sort().join("")}`;
}

function equationProblem(equation: string, operands: readonly EinsumOperand[]): string | undefined {
  const arrow = equation.indexOf("->");
  const terms = equation.slice(0, arrow).split(",");
  const output = equation.slice(arrow + 2);
  if (terms.length > 2) return `has ${terms.length} operand terms: einsum() takes one or two operands`;
  if (terms.length !== operands.length) return `has ${terms.length} operand terms for ${operands.length} operands`;
  for (const [i, term] of terms.entries()) {
    const problem = termProblem(equation, term, operandName(i));
    if (problem !== undefined) return problem;
    const { shape, printed } = operands[i]!;
    if ([...term].length !== shape.length) return `names ${[...term].length} axes '${term}' for ${printed} of rank ${shape.length}`;
  }
  const outputProblem = termProblem(equation, output, "the output");
  if (outputProblem !== undefined) return outputProblem;
  const missing = [...output].find((c) => !terms.some((t) => t.includes(c)));
  if (missing !== undefined) return `has output index ${missing} that no operand has`;
  return undefined;
}

/** Parses and checks an equation against its operands: FT212 or FT213 when it does not fit. */
export function parseEquation(equation: string, operands: readonly EinsumOperand[]): Equation {
  if (typeof equation !== "string") {
    throw ftError("FT212", { equation: String(equation), why: "is not a string: pass the equation first, as in einsum('ij,jk->ik', a, b)" });
  }
  const written = explicit(equation);
  const problem = equationProblem(written, operands);
  if (problem !== undefined) throw ftError("FT212", { equation, why: problem });
  const [lhs, output] = written.split("->") as [string, string];
  const inputs = lhs.split(",").map((t) => [...t]);
  const [a, b] = [operands[0]!, operands[operands.length - 1]!];
  const [ta, tb] = [inputs[0]!, inputs[inputs.length - 1]!];
  for (const [j, index] of tb.entries()) {
    const i = ta.indexOf(index);
    if (i < 0 || dimsAgree(a.shape[i]!, b.shape[j]!)) continue;
    throw ftError("FT213", { equation, index, da: printDim(a.shape[i]!), db: printDim(b.shape[j]!), a: a.printed, b: b.printed });
  }
  return { inputs, output: [...output] };
}
