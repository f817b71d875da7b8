/**
 * The configuration of `fedtensor run`: one table of options that serves the command-line
 * flags, the keys of a JSON config file, validation and the documentation alike. Adding an
 * option is one entry in `runOptions`; its flag, type, default and help row (options-help.ts) follow from it.
 *
 * Every value is validated and every unknown flag or key is an FT305 error: a misspelt option
 * that was silently ignored would quietly train something other than what was asked for.
 */
import { readFile } from "node:fs/promises";
import { parseArgs } from "node:util";
import { ftError } from "../../errors/error.js";
import { countStddevOf, expectedClientsOf, updateNoiseMultiplier, type PrivacyOptions } from "./privacy.js";

/** An option that only means something for some values of a choice option, such as --mu for fedprox. */
export interface Condition {
  readonly key: string;
  readonly values: readonly string[];
}

export interface OptionSpec<T> {
  readonly type: "integer" | "number" | "choice" | "text" | "switch";
  readonly default: T;
  /** What values are allowed, in words, for errors and the help table. */
  readonly range: string;
  readonly description: string;
  /** Whether a value (from a flag or a config file) is allowed. */
  readonly accepts: (value: unknown) => value is T;
  /** A different default when another option has one of some values (e.g. the adaptive optimisers' server learning rate). */
  readonly defaultWhen?: Condition & { readonly value: T };
  /**
   * Whether --resume may give the option a new value: true for options that do not change
   * what a round computes (how many rounds, how often to evaluate, where and on what to run).
   * Any other option given on resume must equal the checkpoint's (src/lib/run/resume-config.ts).
   */
  readonly mayChangeOnResume?: boolean;
}

interface Bounds {
  readonly min: number;
  readonly minExclusive?: boolean;
  readonly max?: number;
  readonly maxExclusive?: boolean;
}

function boundsText({ min, minExclusive, max, maxExclusive }: Bounds): string {
  if (max === undefined) return `${minExclusive ? ">" : ">="} ${min}`;
  return `${min} ${minExclusive ? "<" : "<="} x ${maxExclusive ? "<" : "<="} ${max}`;
}

function withinBounds(x: number, { min, minExclusive, max, maxExclusive }: Bounds): boolean {
  if (minExclusive ? x <= min : x < min) return false;
  return max === undefined || (maxExclusive ? x < max : x <= max);
}

const decimalPattern = /^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i;

/**
 * A flag's text as the number a config file would hold, or the text itself when malformed
 * (validation then reports it): Number(text) would also take "", "0x10" and " 1 ".
 */
function parseDecimal(text: string): unknown {
  return decimalPattern.test(text) ? Number(text) : text;
}

function numeric(type: "integer" | "number", description: string, fallback: number, bounds: Bounds): OptionSpec<number> {
  const isKind = type === "integer" ? Number.isSafeInteger : Number.isFinite;
  return {
    type,
    default: fallback,
    range: `${type} ${boundsText(bounds)}`,
    description,
    accepts: (value): value is number => isKind(value) && withinBounds(value as number, bounds),
  };
}

const integer = numeric.bind(undefined, "integer");
const real = numeric.bind(undefined, "number");

function choice<const V extends string>(description: string, values: readonly V[]): OptionSpec<V> {
  return {
    type: "choice",
    default: values[0]!,
    range: values.join(" | "),
    description,
    accepts: (value): value is V => (values as readonly unknown[]).includes(value),
  };
}

function text(description: string, fallback: string): OptionSpec<string> {
  return {
    type: "text",
    default: fallback,
    range: "non-empty text",
    description,
    accepts: (value): value is string => typeof value === "string" && value.length > 0,
  };
}

function switchOption(description: string): OptionSpec<boolean> {
  return {
    type: "switch",
    default: false,
    range: "true | false",
    description,
    accepts: (value): value is boolean => typeof value === "boolean",
  };
}

function mayChangeOnResume<S extends OptionSpec<unknown>>(spec: S): S {
  return { ...spec, mayChangeOnResume: true };
}

function onlyWhen<T>(condition: Condition, spec: OptionSpec<T>): OptionSpec<T> & { readonly onlyWhen: Condition } {
  return { ...spec, onlyWhen: condition };
}

const adaptiveServerOptimisers = ["fedadam", "fedyogi", "fedadagrad"];

// The clients' optimiser and learning-rate schedule (src/lib/run/optimizers.ts builds them).
const locallyTraining = ["fedavg", "fedavgm", "fedprox", "fedadam", "fedyogi", "fedadagrad", "diloco"];
const adamFamily = ["adam", "adamw", "yogi"];
const clientOptions = {
  clientOptimizer: onlyWhen(
    { key: "algorithm", values: locallyTraining },
    {
      ...choice("Clients' optimiser, fresh each round", ["sgd", "momentum", "nesterov", "adam", "adamw", "adagrad", "rmsprop", "yogi"]),
      defaultWhen: { key: "algorithm", values: ["diloco"], value: "adamw" },
    },
  ),
  clientMomentum: onlyWhen(
    { key: "clientOptimizer", values: ["momentum", "nesterov"] },
    real("Momentum of the clients' SGD", 0.9, { min: 0, max: 1, maxExclusive: true }),
  ),
  clientBeta1: onlyWhen({ key: "clientOptimizer", values: adamFamily }, real("Clients' first-moment decay", 0.9, { min: 0, max: 1, maxExclusive: true })),
  clientBeta2: onlyWhen({ key: "clientOptimizer", values: adamFamily }, real("Clients' second-moment decay", 0.999, { min: 0, max: 1, maxExclusive: true })),
  weightDecay: onlyWhen(
    { key: "clientOptimizer", values: ["adamw"] },
    { ...real("AdamW's decoupled weight decay", 0.01, { min: 0 }), defaultWhen: { key: "algorithm", values: ["diloco"], value: 0.1 } },
  ),
  clipNorm: onlyWhen({ key: "algorithm", values: locallyTraining }, real("Clip each local gradient to this global norm; 0 for none", 0, { min: 0 })),
  lrSchedule: choice("Schedule of --lr over the rounds", ["constant", "exponential", "step", "cosine", "warmup-cosine"]),
  decayRate: onlyWhen(
    { key: "lrSchedule", values: ["exponential", "step"] },
    real("Factor --lr is multiplied by every --decay-rounds rounds", 0.5, { min: 0, minExclusive: true, max: 1 }),
  ),
  decayRounds: onlyWhen({ key: "lrSchedule", values: ["exponential", "step"] }, integer("Rounds per decay by --decay-rate", 10, { min: 1 })),
  warmupRounds: onlyWhen({ key: "lrSchedule", values: ["warmup-cosine"] }, integer("Rounds of linear warm-up from 0 to --lr", 5, { min: 1 })),
  minLrFraction: onlyWhen(
    { key: "lrSchedule", values: ["cosine", "warmup-cosine"] },
    real("The cosine's final rate as a fraction of --lr", 0, { min: 0, max: 1 }),
  ),
};

/** A fixed clip norm C > 0, or "adaptive" (Andrew et al. 2021): --dp-clip. */
const clipNormOrAdaptive: OptionSpec<number | "adaptive"> = {
  type: "number",
  default: 1,
  range: "number > 0 | adaptive",
  description: "DP-FedAvg's clip norm of each client's whole update, or adaptive (a private quantile estimate)",
  accepts: (value): value is number | "adaptive" => value === "adaptive" || (typeof value === "number" && Number.isFinite(value) && value > 0),
};

// Differential privacy (src/lib/algorithms/dp-fedavg.ts; docs/algorithms.md "DP-FedAvg").
const dp = { key: "aggregator", values: ["dp"] };
const adaptiveClip = { key: "dpClip", values: ["adaptive"] };
const privacyOptions = {
  dpClip: onlyWhen(dp, clipNormOrAdaptive),
  dpNoise: onlyWhen(dp, real("DP noise multiplier z: the server adds N(0, (z C)^2) to the clipped sum", 1, { min: 0 })),
  dpDelta: onlyWhen(dp, real("The delta at which each round's epsilon is reported", 1e-5, { min: 0, minExclusive: true, max: 1, maxExclusive: true })),
  dpTargetEpsilon: onlyWhen(
    dp,
    mayChangeOnResume(real("Stop before the round whose epsilon would exceed this; 0 for no limit", 0, { min: 0 })),
  ),
  dpTargetQuantile: onlyWhen(adaptiveClip, real("Adaptive clipping: the quantile of update norms the clip tracks", 0.5, { min: 0, max: 1 })),
  dpClipLr: onlyWhen(adaptiveClip, real("Adaptive clipping: the geometric step eta of the clip's update", 0.2, { min: 0, minExclusive: true })),
  dpInitialClip: onlyWhen(adaptiveClip, real("Adaptive clipping: the clip norm of the first round", 0.1, { min: 0, minExclusive: true })),
};

export const runOptions = {
  rounds: mayChangeOnResume(integer("Federated rounds to run", 20, { min: 1 })),
  clients: integer("Clients the image sets are split among (the text set has one per president)", 100, { min: 1 }),
  clientsPerRound: integer("Clients sampled each round", 10, { min: 1 }),
  chunkClients: integer("Clients per streamed chunk: a round holds one chunk's data at a time (docs/runtime.md)", 100, { min: 1 }),
  dropout: real("Probability that a sampled client drops out of a round (seeded; it contributes nothing)", 0, { min: 0, max: 1, maxExclusive: true }),
  minClients: integer("Fewest surviving clients a round needs; a round with fewer is skipped and logged", 1, { min: 1 }),
  localEpochs: integer("Passes over its data each client makes per round", 1, { min: 1 }),
  batchSize: integer("Client minibatch size", 10, { min: 1 }),
  lr: real("Client learning rate", 0.1, { min: 0, minExclusive: true }),
  // An adaptive server step moves every weight by about serverLr at first (m / sqrt(v) is about
  // 1), so 1 wrecks the model; 0.03 matches FedAvg's accuracy on MNIST after 5 rounds
  // (docs/algorithms.md), within the range of Reddi et al. (2021).
  serverLr: {
    ...real("Server learning rate applied to the aggregated update", 1, { min: 0, minExclusive: true }),
    defaultWhen: { key: "algorithm", values: ["fedadam", "fedyogi", "fedadagrad"], value: 0.03 },
  },
  partition: choice("How examples are split among clients", ["iid", "shards", "dirichlet"]),
  alpha: onlyWhen(
    { key: "partition", values: ["dirichlet"] },
    real("Dirichlet concentration: smaller is more skewed", 0.5, { min: 0, minExclusive: true }),
  ),
  seed: integer("Seed of every random choice: sampling, initialisation, partition", 0, { min: 0, max: 2 ** 32 - 1 }),
  backend: mayChangeOnResume(choice("Backend that runs the programs", ["onnx", "wasm", "cpu", "webgpu", "tensorflow"])),
  engine: mayChangeOnResume({
    ...text("Where chunks of clients run: local, or redis://host:port for BullMQ workers (fedtensor worker; docs/distributed.md)", "local"),
    range: "local | redis://host:port",
    accepts: (value): value is string => value === "local" || (typeof value === "string" && /^rediss?:\/\/[^/\s]+/.test(value)),
  }),
  engineTimeout: mayChangeOnResume(integer("Seconds a round waits for an unreachable Redis (with --engine) before it stops with FT319", 30, { min: 1 })),
  out: mayChangeOnResume(text("Folder for metrics, plots and checkpoints", "runs/latest")),
  checkpointEvery: mayChangeOnResume(integer("Rounds between checkpoints; 0 for none", 5, { min: 0 })),
  keepCheckpoints: mayChangeOnResume(integer("Newest checkpoints kept in --out; older ones are deleted", 3, { min: 1 })),
  resume: mayChangeOnResume(switchOption("Continue the run in --out from its latest checkpoint, with its config")),
  overwrite: mayChangeOnResume(switchOption("Delete the metrics, checkpoints and plot of a previous run in --out first")),
  algorithm: choice("Federated algorithm", [
    "fedavg",
    "fedsgd",
    "fedprox",
    "fedadam",
    "fedyogi",
    "fedadagrad",
    "scaffold",
    "diloco",
    "fedavgm",
  ]),
  model: choice("Model to train", ["logistic", "2nn", "cnn", "char"]),
  dataset: choice("Data set; model char goes with sotu, the others with the image sets", [
    "mnist",
    "fashion-mnist",
    "sotu",
  ]),
  evalEvery: mayChangeOnResume(integer("Rounds between evaluations on the test set", 1, { min: 1 })),
  mu: onlyWhen(
    { key: "algorithm", values: ["fedprox"] },
    real("FedProx proximal term weight", 0.01, { min: 0 }),
  ),
  beta1: onlyWhen(
    { key: "algorithm", values: adaptiveServerOptimisers },
    real("Server optimiser first-moment decay", 0.9, { min: 0, max: 1, maxExclusive: true }),
  ),
  beta2: onlyWhen(
    { key: "algorithm", values: ["fedadam", "fedyogi"] },
    real("Server optimiser second-moment decay", 0.99, { min: 0, max: 1, maxExclusive: true }),
  ),
  tau: onlyWhen(
    { key: "algorithm", values: adaptiveServerOptimisers },
    real("Server optimiser adaptivity, its epsilon", 0.001, { min: 0, minExclusive: true }),
  ),
  outerMomentum: onlyWhen(
    { key: "algorithm", values: ["diloco"] },
    real("DiLoCo outer Nesterov momentum", 0.9, { min: 0, max: 1, maxExclusive: true }),
  ),
  serverMomentum: onlyWhen(
    { key: "algorithm", values: ["fedavgm"] },
    real("FedAvgM server momentum", 0.9, { min: 0, max: 1, maxExclusive: true }),
  ),
  aggregator: choice("How the server combines the clients' updates: plain weighted mean, or DP-FedAvg's clipped and noised sum", ["fedavg", "dp"]),
  ...privacyOptions,
  ...clientOptions,
};

type RunOptions = typeof runOptions;
export type RunOptionKey = keyof RunOptions;
type ValueOf<S> = S extends OptionSpec<infer T> ? T : never;
type ConditionalKey = {
  [K in RunOptionKey]: RunOptions[K] extends { readonly onlyWhen: Condition } ? K : never;
}[RunOptionKey];

/** A validated run configuration; options that apply only to some algorithms are present only then. */
export type RunConfig = {
  readonly [K in Exclude<RunOptionKey, ConditionalKey>]: ValueOf<RunOptions[K]>;
} & { readonly [K in ConditionalKey]?: ValueOf<RunOptions[K]> };

/** Checks that involve several options; errors blame the first of `keys` that was given. */
const crossChecks: readonly {
  readonly keys: readonly [RunOptionKey, ...RunOptionKey[]];
  readonly problem: (config: Readonly<Record<string, unknown>>) => string | undefined;
}[] = [
  {
    keys: ["model", "dataset"],
    problem: ({ model, dataset }) =>
      (model === "char") !== (dataset === "sotu")
        ? `model ${String(model)} does not fit dataset ${String(dataset)}: char goes with sotu, the others with mnist and fashion-mnist`
        : undefined,
  },
  {
    keys: ["warmupRounds", "rounds"],
    problem: ({ warmupRounds, rounds }) =>
      typeof warmupRounds === "number" && warmupRounds >= (rounds as number)
        ? `the warm-up (${warmupRounds} rounds) must end before the last round (--rounds ${String(rounds)})`
        : undefined,
  },
  {
    keys: ["minClients", "clientsPerRound"],
    problem: ({ minClients, clientsPerRound }) =>
      Number(minClients) > Number(clientsPerRound)
        ? `${String(minClients)} surviving clients can never come from ${String(clientsPerRound)} sampled per round (--clients-per-round)`
        : undefined,
  },
  {
    keys: ["aggregator", "algorithm"],
    problem: ({ aggregator, algorithm }) =>
      aggregator === "dp" && algorithm !== "fedavg" ? `--aggregator dp is DP-FedAvg: it goes with --algorithm fedavg, not ${String(algorithm)}` : undefined,
  },
  {
    keys: ["dpNoise", "clientsPerRound", "dpClip"],
    problem: (given) => {
      const config = given as unknown as PrivacyOptions;
      if (config.dpClip !== "adaptive" || updateNoiseMultiplier(config) !== undefined) return undefined;
      const countStddev = countStddevOf(config);
      return `adaptive clipping spends part of the noise on the clipped count (std ${countStddev} for ${expectedClientsOf(config)} expected clients); --dp-noise ${String(config.dpNoise)} leaves none for the update: use a noise multiplier below ${2 * countStddev} or more clients per round`;
    },
  },
  {
    keys: ["overwrite", "resume"],
    problem: ({ resume, overwrite }) =>
      resume === true && overwrite === true ? "--resume continues the run in --out, --overwrite deletes it: give one" : undefined,
  },
];

export const optionEntries = Object.entries(runOptions) as [RunOptionKey, OptionSpec<unknown> & { onlyWhen?: Condition }][];

export function flagName(key: RunOptionKey): string {
  return `--${key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;
}

const keyByFlag = new Map(optionEntries.map(([key]) => [flagName(key).slice(2), key]));

function describeGiven(value: unknown): string {
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
      values[key] = true;
    } else {
      // parseArgs takes the next argument as the value even when it is another flag.
      if (token.value === undefined || (!token.inlineValue && token.value.startsWith("--"))) {
        throw ftError("FT305", { option: token.rawName, why: `needs a value (${spec.range})` });
      }
      values[key] = spec.type === "integer" || spec.type === "number" ? parseDecimal(token.value) : token.value;
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
function validate(given: Partial<Record<RunOptionKey, unknown>>, sourceOf: Source): RunConfig {
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
    const { key: on, values } = spec.onlyWhen;
    if (values.includes(merged[on] as string)) continue;
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
