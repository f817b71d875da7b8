/**
 * The config of a resumed run: the checkpoint's, so `--resume --out runs/x` needs nothing
 * else. Options that do not change what a round computes (rounds, evaluation and checkpoint
 * cadence, backend) may be given anew; any other option given must equal the checkpoint's,
 * because a resumed run that silently trained on another split, or dropped an optimiser's
 * state, would not be the run it claims to continue.
 */
import { ftError } from "../../errors/error.js";
import { hasRedactedCredentials } from "../../errors/redact.js";
import { releasesPrivateData } from "./aggregator-chain.js";
import type { JsonValue } from "./checkpoint.js";
import { flagName, runOptions, validateRunConfig, type OptionSpec, type RunConfig, type RunOptionKey } from "./config.js";

const mayChange = (key: RunOptionKey): boolean => (runOptions[key] as OptionSpec<unknown>).mayChangeOnResume === true;

/**
 * The run config to resume with. `requested` is the config asked for and `given` the options
 * in it that were set explicitly (on the command line or in a config file); `stored` is the
 * config in the checkpoint at `checkpointPath`. FT305 names every given option that differs
 * from the checkpoint's and may not.
 */
export function resumeConfig(requested: RunConfig, given: Iterable<RunOptionKey>, stored: JsonValue, checkpointPath: string): RunConfig {
  if (stored === null || typeof stored !== "object" || Array.isArray(stored)) {
    throw ftError("FT304", { path: checkpointPath, why: "holds no run config to resume with" });
  }
  const checkpointConfig = validateRunConfig(stored as Record<string, JsonValue>, checkpointPath);
  const givenKeys = [...new Set(given)];
  // A private run stays private: its noise and cohorts come from its secret.key to the end.
  if (givenKeys.includes("dpInsecureSeed") && (requested.dpInsecureSeed ?? 0) > 0 && releasesPrivateData(checkpointConfig.aggregator) && !((checkpointConfig.dpInsecureSeed ?? 0) > 0)) {
    throw ftError("FT305", {
      option: "--dp-insecure-seed",
      why:
        `the run in ${requested.out} is private (--aggregator ${checkpointConfig.aggregator}): its noise and cohorts come from its secret.key, ` +
        "and the research mode's public seed would make the rest of it not private; leave --dp-insecure-seed out to continue it, or start a new run in another --out",
    });
  }
  const show = (value: unknown): string => (value === undefined ? "not set" : String(value));
  const differences = givenKeys
    .filter((key) => !mayChange(key) && requested[key] !== checkpointConfig[key])
    .map((key) => `${flagName(key)} ${show(requested[key])} (the checkpoint's run has ${show(checkpointConfig[key])})`);
  if (differences.length > 0) {
    throw ftError("FT305", {
      option: differences.length === 1 ? "--resume" : `--resume (${differences.length} options)`,
      why:
        `${differences.join("; ")}: these change what the run computes, so the checkpoint ${checkpointPath} ` +
        "is not of this run; leave them out to continue it, or start a new run in another --out",
    });
  }
  // A checkpoint keeps no password (train.ts redacts the engine URL): the user gives it again.
  if (!givenKeys.includes("engine") && hasRedactedCredentials(checkpointConfig.engine)) {
    throw ftError("FT305", {
      option: "--engine",
      why: `the run used ${checkpointConfig.engine}, whose password is never written to a checkpoint; give --engine with the password again to resume it`,
    });
  }
  const changed = Object.fromEntries(givenKeys.filter(mayChange).map((key) => [key, requested[key]]));
  return validateRunConfig({ ...checkpointConfig, ...changed, out: requested.out, resume: true, overwrite: false }, checkpointPath);
}
