/**
 * `fedtensor audit [config.json] [--flags] [--canaries M] [--dimension D]`: the one-run audit
 * of a DP run's accountant (src/lib/run/audit.ts): canary clients through the run's chain,
 * Poisson sampler and secret; prints Steinke et al.'s empirical lower bound, Andrew et al.'s
 * estimate and the accountant's epsilon side by side. Exit status 1 when the lower bound
 * exceeds the accountant (the accounting, or the mechanism, is broken), 0 otherwise.
 */
import { loadRunArguments } from "../lib/run/config.js";
import { takeFlags, UsageError, type Command } from "./command.js";
import { resolveExample } from "./run.js";

/** The audit's own integer options taken out of the run's arguments, each defaulting to its value in `names`. */
function takeIntegers(args: readonly string[], names: Record<string, number>): { values: Record<string, number>; rest: string[] } {
  const { flags, rest } = takeFlags(args, new Set(Object.keys(names)));
  const values = { ...names };
  for (const [name, text] of Object.entries(flags)) {
    const value = Number(text);
    if (!Number.isInteger(value) || value < 1) throw new UsageError(`--${name} takes an integer >= 1, got ${text}`);
    values[name] = value;
  }
  return { values, rest };
}

export const auditCommand: Command = {
  name: "audit",
  summary: "check a DP run's epsilon empirically: canary clients through its chain, sampler and secret",
  usage: [
    "usage: fedtensor audit [example | config.json] [fedtensor run's options] [--canaries M] [--dimension D]",
    "",
    "Runs --rounds rounds of the run's dp chain (a fixed --dp-clip) on --clients clients and M canary",
    "clients (default 1000), each joining with probability 1/2, sampled by the run's Poisson sampler",
    "from its secret, on updates of D coordinates (default 4096). Prints the one-run lower bound on",
    "epsilon (Steinke, Nasr and Jagielski 2023; 95% confidence), the estimate of Andrew et al. 2024",
    "and the accountant's epsilon. Exit status 1 when the lower bound exceeds the accountant's.",
  ].join("\n"),
  async run(args) {
    const { values, rest } = takeIntegers(args, { canaries: 1000, dimension: 4096 });
    const { config } = await loadRunArguments(resolveExample(rest));
    const { auditRun } = await import("../lib/run/audit.js");
    const result = auditRun(config, { canaries: values.canaries!, dimension: values.dimension! });
    const notPrivate = (config.dpInsecureSeed ?? 0) > 0 ? " (--dp-insecure-seed: the noise is known to the auditor)" : "";
    console.log(`canaries: ${values.canaries} (${result.joined} joined), ${result.correct} of ${result.guesses} guesses right${notPrivate}`);
    console.log(`empirical lower bound (Steinke et al., 95%)  ${result.lowerBound.toFixed(3)}`);
    console.log(`estimate (Andrew et al.)                     ${result.estimate.toFixed(3)}`);
    console.log(`accountant (${result.accountantName})${" ".repeat(Math.max(1, 33 - result.accountantName.length))}${result.accountant.toFixed(3)}`);
    if (result.lowerBound > result.accountant) {
      console.log("FAILED: the lower bound exceeds the accountant's epsilon");
      return 1;
    }
    console.log("passed: the lower bound is within the accountant's epsilon");
    return 0;
  },
};
