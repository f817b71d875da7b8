/**
 * `fedtensor run [config.json] [--flags]`: the main job, a federated training run on data
 * that ships offline, with a progress bar, metrics (JSONL and CSV), checkpoints and a plot.
 */
import { existsSync, readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { algorithmName, loadRunArguments } from "../lib/run/config.js";
import { stagesHelp } from "../lib/run/aggregator-chain.js";
import { formatRunOptionsHelp } from "../lib/run/options-help.js";
import type { Command } from "./command.js";

/** The examples folder of this package (dist/src/cli -> examples). */
const examplesDir = join(dirname(fileURLToPath(import.meta.url)), "../../../examples");

/** `fedtensor run fedavg-mnist` means examples/fedavg-mnist.json; anything else is left as given. */
export function resolveExample(args: readonly string[]): string[] {
  return args.map((arg, i) => {
    const isPositional = !arg.startsWith("-") && (i === 0 || !args[i - 1]!.startsWith("--") || args[i - 1]!.includes("="));
    const candidate = join(examplesDir, `${arg}.json`);
    return isPositional && !existsSync(arg) && existsSync(candidate) ? candidate : arg;
  });
}

const exampleNames = (): string[] =>
  existsSync(examplesDir) ? readdirSync(examplesDir).filter((f) => f.endsWith(".json") && f !== "tsconfig.json").map((f) => f.slice(0, -5)) : [];

export const runCommand: Command = {
  name: "run",
  summary: "train a model with a federated algorithm (the main job)",
  get usage() {
    return [
      "usage: fedtensor run [example | config.json] [--option value ...]",
      "",
      "A JSON config file sets options by name (camelCase keys); flags override it.",
      `Examples: ${exampleNames().join(", ")} (from examples/*.json).`,
      "",
      formatRunOptionsHelp(),
      "",
      stagesHelp,
    ].join("\n");
  },
  async run(args) {
    const { config: requested, given } = await loadRunArguments(resolveExample(args));
    // Loaded here so that other commands start without TensorFlow.js.
    const { train } = await import("../lib/run/train.js");
    const result = await train(requested, process.stdout, { given });
    // On --resume the run's config is the checkpoint's, which the result carries.
    const { config } = result;
    const accuracy = result.accuracy === undefined ? "not evaluated" : `${(result.accuracy * 100).toFixed(2)}%`;
    const { notPrivateLabel } = await import("../lib/run/privacy.js");
    const notPrivate = notPrivateLabel(config);
    const privacy = result.epsilon === undefined ? "" : ` at epsilon ${result.epsilon.toFixed(2)} (delta ${config.dpDelta ?? config.ddpDelta})${notPrivate === undefined ? "" : `, ${notPrivate.toUpperCase()}`}`;
    console.log(
      `final test accuracy: ${accuracy} after ${result.rounds} rounds of ${algorithmName(config)} (${config.model}, ${config.dataset})${privacy} in ${result.seconds.toFixed(1)} s`,
    );
    console.log(`metrics: ${result.outDir}/metrics.csv and metrics.jsonl; plot: ${result.outDir}/plot.png; checkpoints: ${result.outDir}/`);
    return 0;
  },
};
