/**
 * A program's declared privacy budget (`program(inputs, body, { budget })`, docs/language.md "A
 * program's budget"): its shape and its check. The accountant that prices a program against it
 * is the library's (src/lib/privacy/program-epsilon.ts); `fedtensor check` and the checker
 * plugin compare a body's literal releases with it (checker-plugin/budget.ts).
 */
import { ftError } from "../errors/error.js";

/**
 * A program's declared budget: epsilon at delta over `rounds` runs (1 by default), each client
 * in a run's cohort with probability `samplingRate` (1 by default).
 *
 * @example
 * const budget: ProgramBudgetOption = { epsilon: 3, delta: 1e-5, rounds: 100, samplingRate: 0.01 };
 */
export interface ProgramBudgetOption {
  readonly epsilon: number;
  readonly delta: number;
  readonly rounds?: number;
  readonly samplingRate?: number;
}

/** A budget checked (FT363: not numbers in range, or an unknown key), with its defaults (1 round, rate 1) filled in. */
export function checkBudget(budget: unknown): Required<ProgramBudgetOption> {
  if (typeof budget !== "object" || budget === null) throw ftError("FT363", { why: "expected { epsilon, delta, rounds?, samplingRate? }" });
  const b = budget as Record<string, unknown>;
  const unknown = Object.keys(b).find((k) => !["epsilon", "delta", "rounds", "samplingRate"].includes(k));
  if (unknown !== undefined) throw ftError("FT363", { why: `unknown key ${unknown}; the keys are epsilon, delta, rounds, samplingRate` });
  const number = (key: string, ok: (v: number) => boolean, range: string, fallback?: number): number => {
    const v = b[key] ?? fallback;
    if (!(typeof v === "number" && ok(v))) throw ftError("FT363", { why: `${key} ${String(v)}: ${range}` });
    return v;
  };
  return {
    epsilon: number("epsilon", (v) => v > 0 && Number.isFinite(v), "a finite number > 0"),
    delta: number("delta", (v) => v > 0 && v < 1, "a number in (0, 1)"),
    rounds: number("rounds", (v) => Number.isInteger(v) && v >= 1, "a whole number >= 1", 1),
    samplingRate: number("samplingRate", (v) => v > 0 && v <= 1, "a number in (0, 1]", 1),
  };
}
