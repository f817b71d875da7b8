/**
 * The configuration of `fedtensor run`: one table of options that serves the command-line
 * flags, the keys of a JSON config file, validation and the documentation alike (the table
 * itself is run-options.ts): this file parses flags and config files and validates them.
 *
 * Every value is validated and every unknown flag or key is an FT305 error: a misspelt option
 * that was silently ignored would quietly train something other than what was asked for.
 */
import { readFile } from "node:fs/promises";
import { parseArgs } from "node:util";
import { ftError } from "../../errors/error.js";
import { expandAggregatorList } from "./aggregator-chain.js";
import { float32Representable, type Condition, type OptionSpec } from "./option-specs.js";
import { crossChecks, runOptions, type RunOptionKey, type RunConfig } from "./run-options.js";

export type { OptionSpec } from "./option-specs.js";
export { runOptions, type RunConfig, type RunOptionKey } from "./run-options.js";

const decimalPattern = /^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i;

/**
 * A flag's text as the number a config file would hold, or the text itself when malformed
 * (validation then reports it): Number(text) would also take "", "0x10" and " 1 ".
 */
function parseDecimal(text: string): unknown {
  return decimalPattern.test(text) ? Number(text) : text;
}

export const optionEntries = Object.entries(runOptions) as [RunOptionKey, OptionSpec<unknown> & { onlyWhen?: Condition }][];

export function flagName(key: RunOptionKey): string {
  return `--${key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;
}

const keyByFlag = new Map(optionEntries.map(([key]) => [flagName(key).slice(2), key]));

function describeGiven(value: unknown): string {
  // JSON writes Infinity and NaN as null, which is not what was given (--lr 1e400 is Infinity).
  if (typeof value === "number" && !Number.isFinite(value)) return `${value} (not finite)`;
  if (typeof value === "number" && !float32Representable(value)) return `${value} (${Math.fround(value)} in float32, the precision the programs compute in)`;
  return JSON.stringify(value) ?? String(value);
}

/** The name that a misspelling in case, dashes or underscores stands for, so an error can suggest it. */
function suggestion(given: string, names: readonly string[]): string {
  const normalise = (s: string): string => s.toLowerCase().replace(/[-_]/g, "");
  const match = names.find((name) => normalise(name) === normalise(given));
  return match === undefined ? "" : ` (did you mean ${match}?)`;
}

/** Where a value came from, as errors name it: "--lr" or "lr (in run.json)". */
type Source = (key: RunOptionKey) => string;

export interface ParsedRunFlags {
  /** The config file named as the one positional argument, if any. */
  readonly configPath: string | undefined;
  readonly values: Partial<Record<RunOptionKey, unknown>>;
}

/** Words that say on or off: after a switch they are a value given to it, not a config file. */
const switchWords = /^(true|false|yes|no|on|off|1|0)$/i;

/** Parses command-line arguments into option values (not yet validated) and the config file path. */
export function parseRunFlags(args: readonly string[]): ParsedRunFlags {
  const { tokens } = parseArgs({
    args: [...args],
    options: Object.fromEntries(
      optionEntries.map(([key, spec]) => [flagName(key).slice(2), { type: spec.type === "switch" ? "boolean" : "string" }]),
    ),
    strict: false,
    allowPositionals: true,
    tokens: true,
  });
  const values: Partial<Record<RunOptionKey, unknown>> = {};
  const positionals: string[] = [];
  for (const token of tokens) {
    if (token.kind === "positional") positionals.push(token.value);
    if (token.kind !== "option") continue;
    const key = keyByFlag.get(token.name);
    if (key === undefined || !token.rawName.startsWith("--")) {
      const flags = optionEntries.map(([k]) => flagName(k));
      throw ftError("FT305", { option: token.rawName, why: `unknown flag${suggestion(token.rawName.replace(/^-+/, "--"), flags)}` });
    }
    if (key in values) throw ftError("FT305", { option: token.rawName, why: "given more than once" });
    const spec = runOptions[key] as OptionSpec<unknown>;
    if (spec.type === "switch") {
      if (token.value !== undefined) throw ftError("FT305", { option: token.rawName, why: "takes no value" });
      // `--resume yes` would read "yes" as the config file: a word of yes or no after a switch is a value given to it.
      const next = tokens[tokens.indexOf(token) + 1];
      if (next?.kind === "positional" && switchWords.test(next.value)) {
        throw ftError("FT305", { option: token.rawName, why: `takes no value, got ${JSON.stringify(next.value)}: give ${token.rawName} alone to turn it on, leave it out to keep it off` });
      }
      values[key] = true;
    } else {
      // parseArgs takes the next argument as the value even when it is another flag.
      if (token.value === undefined || (!token.inlineValue && token.value.startsWith("--"))) {
        throw ftError("FT305", { option: token.rawName, why: `needs a value (${spec.range})` });
      }
      const numeric = spec.type === "integer" || spec.type === "number";
      // `--out -1` made a folder named -1: a text value that starts with a dash is a flag or a slip.
      if (!numeric && !token.inlineValue && token.value.startsWith("-")) {
        throw ftError("FT305", { option: token.rawName, why: `needs a value (${spec.range}), got ${JSON.stringify(token.value)}, which reads as a flag; write ./${token.value} for a folder of that name` });
      }
      values[key] = numeric ? parseDecimal(token.value) : token.value;
    }
  }
  if (positionals.length > 1) {
    throw ftError("FT305", { option: positionals[1]!, why: "only one config file may be given" });
  }
  return { configPath: positionals[0], values };
}

/** Reads a JSON config file: an object whose keys are option names as in RunConfig (camelCase). */
async function readRunConfigFile(path: string): Promise<Record<string, unknown>> {
  let textContent: string;
  try {
    textContent = await readFile(path, "utf8");
  } catch (error) {
    throw ftError("FT304", { path, why: `cannot read the config file (${(error as Error).message})` });
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(textContent);
  } catch (error) {
    throw ftError("FT304", { path, why: `not valid JSON (${(error as Error).message})` });
  }
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) {
    throw ftError("FT304", { path, why: "a config file holds one JSON object of options" });
  }
  return parsed as Record<string, unknown>;
}

/** Checks a config-file object's keys against the option table. */
function knownKeys(object: Readonly<Record<string, unknown>>, source: string): Partial<Record<RunOptionKey, unknown>> {
  const keys = optionEntries.map(([key]) => key as string);
  for (const key of Object.keys(object)) {
    if (!keys.includes(key)) {
      throw ftError("FT305", { option: `${key} (in ${source})`, why: `unknown config key${suggestion(key, keys)}` });
    }
  }
  return object as Partial<Record<RunOptionKey, unknown>>;
}

/**
 * Validates explicitly given values over the defaults. Options that only apply to other
 * algorithms or partitions are errors when given, and absent from the result when not.
 */
function validate(listed: Partial<Record<RunOptionKey, unknown>>, sourceOf: Source): RunConfig {
  // A config file's aggregator list sets the chain and its stages' options.
  const given = expandAggregatorList(listed, sourceOf("aggregator")) as Partial<Record<RunOptionKey, unknown>>;
  const merged: Record<string, unknown> = {};
  const chosen = (key: string): unknown => (key in given ? given[key as RunOptionKey] : runOptions[key as RunOptionKey].default);
  for (const [key, spec] of optionEntries) {
    const dependent = spec.defaultWhen !== undefined && spec.defaultWhen.values.includes(chosen(spec.defaultWhen.key) as string);
    const value = key in given ? given[key] : dependent ? spec.defaultWhen!.value : spec.default;
    if (!spec.accepts(value)) {
      throw ftError("FT305", { option: sourceOf(key), why: `expected ${spec.range}, got ${describeGiven(value)}` });
    }
    merged[key] = value;
  }
  for (const [key, spec] of optionEntries) {
    if (spec.onlyWhen === undefined) continue;
    const { key: on, values, holds } = spec.onlyWhen;
    if (holds === undefined ? values.includes(merged[on] as string) : holds(merged[on])) continue;
    // On --resume an option the resumed run decides (its --aggregator, say) is the checkpoint's:
    // whether the option applies is checked against it there (resume-config.ts), not against a default.
    if (key in given && given.resume === true && !(on in given)) continue;
    if (key in given) {
      const onFlag = flagName(on as RunOptionKey);
      throw ftError("FT305", {
        option: sourceOf(key),
        why: `applies only with ${onFlag} ${values.join(" | ")}, not ${String(merged[on])}`,
      });
    }
    delete merged[key];
  }
  for (const { keys, problem } of crossChecks) {
    const why = problem(merged);
    if (why !== undefined) throw ftError("FT305", { option: sourceOf(keys.find((key) => key in given) ?? keys[0]), why });
  }
  return merged as RunConfig;
}

/** Validates a config object, such as one stored in a checkpoint; `source` names it in errors. */
export function validateRunConfig(object: Readonly<Record<string, unknown>>, source: string): RunConfig {
  return validate(knownKeys(object, source), (key) => `${key} (in ${source})`);
}

/** The run's algorithm as the plot and the final line name it: the algorithm, prefixed by a non-fedavg aggregator chain (dp-fedavg, clip,dp-fedprox, median-fedavg). */
export const algorithmName = (config: Pick<RunConfig, "aggregator" | "algorithm">): string =>
  config.aggregator === "fedavg" ? config.algorithm : `${config.aggregator}-${config.algorithm}`;

export interface RunArguments {
  readonly config: RunConfig;
  /** The options set by a flag or the config file (the others have their defaults). */
  readonly given: readonly RunOptionKey[];
}

/**
 * `fedtensor run [config.json] [--flags]` arguments to a validated configuration: flags
 * override the file, the file overrides FEDTENSOR_BACKEND (as for programs run from the
 * library, where the backend option overrides it), which overrides the default.
 */
export async function loadRunArguments(args: readonly string[]): Promise<RunArguments> {
  const { configPath, values } = parseRunFlags(args);
  const fromFile = configPath === undefined ? {} : knownKeys(await readRunConfigFile(configPath), configPath);
  const environment = process.env.FEDTENSOR_BACKEND;
  const fromEnvironment = environment === undefined || environment === "" ? {} : { backend: environment };
  const given = { ...fromEnvironment, ...fromFile, ...values };
  const sourceOf = (key: RunOptionKey): string =>
    key in values ? flagName(key) : key in fromFile ? `${key} (in ${configPath})` : "FEDTENSOR_BACKEND";
  const config = validate(given, sourceOf);
  return { config, given: Object.keys(given) as RunOptionKey[] };
}

export async function loadRunConfig(args: readonly string[]): Promise<RunConfig> {
  return (await loadRunArguments(args)).config;
}
