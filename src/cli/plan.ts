/**
 * `fedtensor plan [config.json] [--flags] [--target-epsilon E]`: a private run's privacy plan
 * before any data is read (src/lib/run/plan.ts): the epsilon each round spends and the total
 * by the run's accountant and, with --target-epsilon, the smallest noise multiplier whose
 * --rounds rounds stay within it. Exit status 1 when the plan exceeds the config's --max-epsilon,
 * as `fedtensor run` and `fedtensor serve` would refuse it (FT360).
 */
import { loadRunArguments } from "../lib/run/config.js";
import { takeFlags, UsageError, type Command } from "./command.js";
import { resolveExample } from "./run.js";

/** --target-epsilon E (or =E) taken out of the run's arguments. */
function takeTarget(args: readonly string[]): { target: number | undefined; rest: string[] } {
  const { flags, rest } = takeFlags(args, new Set(["target-epsilon"]));
  const text = flags["target-epsilon"];
  if (text === undefined) return { target: undefined, rest };
  const target = Number(text);
  if (!(target > 0 && Number.isFinite(target))) throw new UsageError(`--target-epsilon takes a number > 0, got ${text}`);
  return { target, rest };
}

export const planCommand: Command = {
  name: "plan",
  summary: "print the epsilon a private run will spend, round by round, before it reads any data",
  usage: [
    "usage: fedtensor plan [example | config.json] [fedtensor run's options] [--target-epsilon E]",
    "",
    "Prices the releases of a run with --aggregator dp (by --accountant: pld, the default, or rdp)",
    "or distributed-dp (rdp): the epsilon each round spends and the total over --rounds at the",
    "run's delta; --target-epsilon E adds the smallest noise multiplier that spends at most E.",
    "Exit status 1 when the total exceeds the config's --max-epsilon (run and serve refuse it: FT360).",
  ].join("\n"),
  async run(args) {
    const { target, rest } = takeTarget(args);
    const { config } = await loadRunArguments(resolveExample(rest));
    const { formatPlan, parameterCount, privacyPlan } = await import("../lib/run/plan.js");
    const plan = privacyPlan(config, parameterCount(config), target);
    if (plan === undefined) {
      console.log(`--aggregator ${config.aggregator} has no dp or distributed-dp stage: its rounds release nothing an accountant prices`);
      return 0;
    }
    console.log(formatPlan(plan));
    const max = config.maxEpsilon ?? 0;
    if (max > 0 && plan.total > max) {
      console.log(`over --max-epsilon ${max}: fedtensor run and serve refuse this run (FT360)`);
      return 1;
    }
    return 0;
  },
};
