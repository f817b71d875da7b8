/**
 * The table of `fedtensor run` options, grouped by what they configure, and the checks that
 * involve several of them. Adding an option is one entry here; its flag, validation, config
 * key and help row (options-help.ts) follow from it (config.ts).
 */
import { aggregatorRefusal } from "../algorithms/aggregation.js";
import { aggregatorOf } from "../aggregators/aggregator.js";
import { attacks } from "../aggregators/stages.js";
import { aggregatorOption, chainHas, runChainProblem, runStages, withStage, type ChainOptions } from "./aggregator-chain.js";
import { accountantNames, countStddevOf, expectedClientsOf, updateNoiseMultiplier, type PrivacyOptions } from "./privacy.js";
import { redisUrlProblem } from "./engine/url.js";
import { choice, float32Representable, integer, mayChangeOnResume, onlyWhen, real, switchOption, text, type Condition, type OptionSpec } from "./option-specs.js";

/** The algorithms of --algorithm. */
export const algorithmNames = ["fedavg", "fedsgd", "fedprox", "fedadam", "fedyogi", "fedadagrad", "scaffold", "diloco", "fedavgm", "mime", "mimelite", "qffl", "afl", "fedper", "ditto"] as const;

/** The models of character windows, which only the text set (sotu) feeds. */
const textModels = ["char", "transformer", "lstm"];

const adaptiveServerOptimisers = ["fedadam", "fedyogi", "fedadagrad"];

// The clients' optimiser and learning-rate schedule (src/lib/run/optimizers.ts builds them).
const locallyTraining = ["fedavg", "fedavgm", "fedprox", "fedadam", "fedyogi", "fedadagrad", "diloco", "afl", "fedper", "ditto"];
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
  accepts: (value): value is number | "adaptive" => value === "adaptive" || (typeof value === "number" && Number.isFinite(value) && float32Representable(value) && value > 0),
};

// Differential privacy: the dp stage (src/lib/aggregators; docs/algorithms.md "DP-FedAvg").
const dp = withStage("dp");
const adaptiveClip = { key: "dpClip", values: ["adaptive"] };
// The chains whose releases an accountant prices: dp and distributed-dp.
const accounted = { key: "aggregator", values: ["a chain with dp or distributed-dp"], holds: (value: unknown) => chainHas(value, "dp") || chainHas(value, "distributed-dp") };
const privacyOptions = {
  dpClip: onlyWhen(dp, clipNormOrAdaptive),
  dpNoise: onlyWhen(dp, real("DP noise multiplier z: the server adds N(0, (z C)^2) to the clipped sum", 1, { min: 0, minExclusive: true })),
  dpDelta: onlyWhen(dp, real("The delta at which each round's epsilon is reported", 1e-5, { min: 0, minExclusive: true, max: 1, maxExclusive: true })),
  dpTargetEpsilon: onlyWhen(
    dp,
    mayChangeOnResume(real("Stop before the round whose epsilon would exceed this; 0 for no limit", 0, { min: 0 })),
  ),
  dpTargetQuantile: onlyWhen(adaptiveClip, real("Adaptive clipping: the quantile of update norms the clip tracks", 0.5, { min: 0, max: 1 })),
  dpClipLr: onlyWhen(adaptiveClip, real("Adaptive clipping: the geometric step eta of the clip's update", 0.2, { min: 0, minExclusive: true })),
  dpInitialClip: onlyWhen(adaptiveClip, real("Adaptive clipping: the clip norm of the first round", 0.1, { min: 0, minExclusive: true })),
  accountant: onlyWhen(
    accounted,
    mayChangeOnResume(choice("The accountant epsilon comes from: pld (privacy loss distributions, the tightest) or rdp (Renyi DP, the cross-check)", accountantNames)),
  ),
  maxEpsilon: onlyWhen(
    accounted,
    mayChangeOnResume(real("Refuse to start a run whose plan (fedtensor plan) spends more than this epsilon in --rounds rounds (FT360); 0 for no limit", 0, { min: 0 })),
  ),
  dpInsecureSeed: onlyWhen(
    dp,
    integer("Research only: derive the noise and the cohorts from this seed instead of the OS's secret randomness; the run is then NOT private (said in every line, row and plot); 0 for a private run", 0, { min: 0, max: 2 ** 32 - 1 }),
  ),
};

// Secure aggregation: the secure stage (src/lib/aggregators; docs/language.md "Secure aggregation").
const secure = withStage("secure");
const secureOptions = {
  secureBits: onlyWhen(secure, integer("Secure aggregation: the sums' modulus is 2^bits", 30, { min: 8, max: 30 })),
  secureClip: onlyWhen(secure, real("Secure aggregation: each coordinate of a client's update is clipped to [-clip, clip]", 1, { min: 0, minExclusive: true })),
  secureNeighbours: onlyWhen(secure, integer("Secure aggregation: mask neighbours per client (even), 0 for SecAgg+'s 2 ceil(log2 n) in each group of n", 0, { min: 0 })),
  secureGroupMin: onlyWhen(secure, integer("Secure aggregation: the fewest clients of a group; each streamed chunk is one group, and the server learns each group's sum (docs/distributed.md)", 2, { min: 2 })),
};

// Distributed DP: the distributed-dp stage (src/lib/run/distributed-dp-run.ts; docs/language.md "Distributed DP").
const distributedDpRun = withStage("distributed-dp");
const distributedDpOptions = {
  ddpClip: onlyWhen(distributedDpRun, real("Distributed DP: each client's whole update is clipped to this L2 norm", 1, { min: 0, minExclusive: true })),
  ddpNoise: onlyWhen(distributedDpRun, real("Distributed DP noise multiplier z: with --min-clients survivors the sum carries about N(0, (z clip)^2), added by the clients", 1, { min: 0, minExclusive: true })),
  ddpBits: onlyWhen(distributedDpRun, integer("Distributed DP: the secure sum's modulus is 2^bits", 16, { min: 2, max: 30 })),
  ddpDelta: onlyWhen(distributedDpRun, real("Distributed DP: the delta at which each round's epsilon is reported", 1e-5, { min: 0, minExclusive: true, max: 1, maxExclusive: true })),
  ddpTargetEpsilon: onlyWhen(distributedDpRun, real("Distributed DP: choose --ddp-noise so that --rounds rounds spend this epsilon at --ddp-delta; 0 to take --ddp-noise as given", 0, { min: 0 })),
};

// Mime and MimeLite, q-FFL and agnostic FL (src/lib/algorithms/mime.ts, qffl.ts, afl.ts; docs/algorithms.md).
const mimeFamily = { key: "algorithm", values: ["mime", "mimelite"] };
const mimeAndFairnessOptions = {
  mimeOptimizer: onlyWhen(
    mimeFamily,
    choice("Mime's base optimiser: its state lives at the server (moved by the full-batch gradient), clients apply it frozen", [
      "momentum",
      "sgd",
      "nesterov",
      "adam",
      "adamw",
      "adagrad",
      "rmsprop",
      "yogi",
    ]),
  ),
  mimeMomentum: onlyWhen({ key: "mimeOptimizer", values: ["momentum", "nesterov"] }, real("Momentum of Mime's base optimiser", 0.9, { min: 0, max: 1, maxExclusive: true })),
  q: onlyWhen(
    { key: "algorithm", values: ["qffl"] },
    real("q-FFL's fairness exponent: 0 weighs clients alike (FedAvg); larger q favours the clients with the highest loss", 1, { min: 0 }),
  ),
  aflLr: onlyWhen(
    { key: "algorithm", values: ["afl"] },
    real("AFL: step size of the projected ascent on the mixture weights lambda (one per client)", 0.001, { min: 0 }),
  ),
};

// Robust aggregation, attack simulation and quantization (src/lib/run/robust.ts; docs/algorithms.md "Robustness").
const attacking = { key: "attack", values: attacks };
const robustOptions = {
  trimFraction: onlyWhen(
    withStage("trimmed-mean"),
    real("Trimmed mean: fraction of clients dropped from each end of every coordinate", 0.1, { min: 0, max: 0.5, maxExclusive: true }),
  ),
  krumByzantine: onlyWhen(withStage("krum"), integer("Krum: Byzantine clients f tolerated (needs more than 2f + 2 per round)", 1, { min: 0 })),
  krumSelect: onlyWhen(withStage("krum"), integer("Krum: clients of lowest score averaged (1: Krum, more: multi-Krum)", 1, { min: 1 })),
  normBound: onlyWhen(withStage("clip", "dp"), real("The clip stage without dp (norm-clip): L2 bound of each client's whole update", 1, { min: 0, minExclusive: true })),
  zeroingBound: onlyWhen(withStage("zeroing"), real("The zeroing stage: a client's update of L2 norm above this is zeroed", 1, { min: 0, minExclusive: true })),
  attack: choice("Simulated attack of --byzantine clients: none, or what they send instead of their update", ["none", ...attacks]),
  byzantine: onlyWhen(attacking, real("Fraction of each cohort that attacks (chosen by the seed)", 0.1, { min: 0, max: 1 })),
  attackScale: onlyWhen(attacking, real("s of the attack: sign-flip sends -s x update, scale s x update, noise N(0, s^2)", 10, { min: 0 })),
  quantizeBits: integer("Quantize each client's update to this many bits per coordinate (unbiased stochastic rounding): the quantize stage, put first in the chain when --aggregator names none; 0 for none", 0, { min: 0, max: 16 }),
  quantizeRotation: onlyWhen(
    { key: "quantizeBits", values: ["1 to 16"], holds: (bits) => Number(bits) > 0 },
    switchOption("Quantize after a random Hadamard rotation shared by the cohort (Suresh et al. 2017): few bits lose less"),
  ),
};

// Federated and personalization evaluation on the clients' held-out data (src/lib/run/federated-eval.ts; docs/algorithms.md).
const federatedEvaluationOptions = {
  clientHoldout: real("Share of each client's examples held out of training for federated evaluation (per-client accuracy); 0 for none", 0, { min: 0, max: 1, maxExclusive: true }),
  evalClients: mayChangeOnResume(integer("Clients evaluated on their held-out data at each evaluation, drawn per round; 0 for all", 0, { min: 0 })),
  topK: integer("Also report top-k accuracy (central and per client) for this k; 1 for none", 1, { min: 1 }),
  personalizeEpochs: mayChangeOnResume(integer("After training, each evaluated client fine-tunes the model for this many epochs on its training split and is evaluated before and after; 0 for none", 0, { min: 0 })),
  evalNoise: real("Noise multiplier of the DP histograms of the clients' accuracies that a dp or distributed-dp run's evaluation releases (their cost is in the run's epsilon)", 5, { min: 0, minExclusive: true }),
};

export const runOptions = {
  rounds: mayChangeOnResume(integer("Federated rounds to run", 20, { min: 1 })),
  clients: integer("Clients the image sets are split among (the text set has one per president)", 100, { min: 1 }),
  clientsPerRound: integer("Clients sampled each round; with --aggregator dp the expected cohort: each client joins with probability clients-per-round / clients", 10, { min: 1 }),
  chunkClients: integer("Clients per streamed chunk: a round holds one chunk's data at a time (docs/runtime.md)", 100, { min: 1 }),
  stateMemory: mayChangeOnResume(integer("MiB of client state (FedPer's heads, Ditto's models, SCAFFOLD's controls) kept in memory; the rest spills to a private temporary folder", 256, { min: 0 })),
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
    defaultWhen: { key: "algorithm", values: adaptiveServerOptimisers, value: 0.03 },
  },
  partition: choice("How examples are split among clients", ["iid", "shards", "dirichlet", "quantity"]),
  alpha: onlyWhen(
    { key: "partition", values: ["dirichlet", "quantity"] },
    real("Dirichlet concentration (of each class's split with dirichlet, of the clients' sizes with quantity): smaller is more skewed", 0.5, { min: 0, minExclusive: true }),
  ),
  seed: integer("Seed of the random choices: sampling, initialisation, partition; never of a private run's secrets (DP noise and cohorts, secure masks: from the OS, in secret.key)", 0, { min: 0, max: 2 ** 32 - 1 }),
  backend: mayChangeOnResume(choice("Backend that runs the programs", ["onnx", "wasm", "cpu", "webgpu", "tensorflow"])),
  engine: mayChangeOnResume({
    ...text("Where chunks of clients run: local, or redis://host:port for BullMQ workers (fedtensor worker; docs/distributed.md)", "local"),
    range: "local | redis://host:port",
    accepts: (value): value is string => value === "local" || (typeof value === "string" && redisUrlProblem(value) === undefined),
  }),
  engineTimeout: mayChangeOnResume(integer("Seconds a round waits for an unreachable Redis (with --engine) before it stops with FT319", 30, { min: 1 })),
  waitNotice: mayChangeOnResume(integer("Seconds a round waits for workers (with --engine) or for clients (fedtensor serve) before it says what it waits for, and between such reports", 10, { min: 1, max: 3600 })),
  out: mayChangeOnResume(text("Folder for metrics, plots and checkpoints", "runs/latest")),
  checkpointEvery: mayChangeOnResume(integer("Rounds between checkpoints; 0 for none", 5, { min: 0 })),
  keepCheckpoints: mayChangeOnResume(integer("Newest checkpoints kept in --out; older ones are deleted", 3, { min: 1 })),
  resume: mayChangeOnResume(switchOption("Continue the run in --out from its latest checkpoint, with its config")),
  overwrite: mayChangeOnResume(switchOption("Delete the metrics, checkpoints and plot of a previous run in --out first")),
  algorithm: choice("Federated algorithm", algorithmNames),
  model: choice("Model to train", ["logistic", "2nn", "cnn", "char", "transformer", "lstm"]),
  dataset: choice("Data set; models char, transformer and lstm go with sotu, logistic with synthetic (FedProx's Synthetic(alpha, beta), 60 features), the others with the image sets", [
    "mnist",
    "fashion-mnist",
    "sotu",
    "synthetic",
  ]),
  syntheticAlpha: onlyWhen(
    { key: "dataset", values: ["synthetic"] },
    real("Synthetic(alpha, beta)'s alpha: how much the clients' models differ (FedProx: 0, 0.5, 1)", 1, { min: 0 }),
  ),
  syntheticBeta: onlyWhen(
    { key: "dataset", values: ["synthetic"] },
    real("Synthetic(alpha, beta)'s beta: how much the clients' inputs differ (FedProx: 0, 0.5, 1)", 1, { min: 0 }),
  ),
  evalEvery: mayChangeOnResume(integer("Rounds between evaluations on the test set", 1, { min: 1 })),
  mu: onlyWhen(
    { key: "algorithm", values: ["fedprox"] },
    real("FedProx proximal term weight", 0.01, { min: 0 }),
  ),
  personalParams: onlyWhen(
    { key: "algorithm", values: ["fedper"] },
    text("FedPer's personal parameters, kept by each client (comma-separated names, e.g. w3,b3); 'head' for the model's last two, its output layer (of logistic, its bias)", "head"),
  ),
  dittoLambda: onlyWhen(
    { key: "algorithm", values: ["ditto"] },
    real("Ditto's pull of each personal model toward the global one (lambda)", 0.1, { min: 0 }),
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
  aggregator: aggregatorOption,
  ...privacyOptions,
  ...distributedDpOptions,
  ...secureOptions,
  ...robustOptions,
  ...clientOptions,
  ...mimeAndFairnessOptions,
  ...federatedEvaluationOptions,
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
export const crossChecks: readonly {
  readonly keys: readonly [RunOptionKey, ...RunOptionKey[]];
  readonly problem: (config: Readonly<Record<string, unknown>>) => string | undefined;
}[] = [
  {
    keys: ["model", "dataset"],
    problem: ({ model, dataset }) =>
      textModels.includes(String(model)) !== (dataset === "sotu")
        ? `model ${String(model)} does not fit dataset ${String(dataset)}: ${textModels.join(", ")} go with sotu, the others with mnist and fashion-mnist`
        : dataset === "synthetic" && model !== "logistic"
          ? `model ${String(model)} does not fit dataset synthetic: its 60 features go with logistic (the model FedProx trains on it)`
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
    keys: ["secureNeighbours"],
    problem: ({ secureNeighbours }) =>
      typeof secureNeighbours === "number" && secureNeighbours % 2 !== 0 ? `the mask graph pairs each client with as many clients on either side: give an even number, not ${secureNeighbours}` : undefined,
  },
  {
    // The chain's own problems first (FT326), then whether the algorithm takes it (FT305's reasons).
    keys: ["aggregator", "quantizeBits", "attack", "algorithm"],
    problem: (config) => {
      const why = runChainProblem(config as unknown as ChainOptions);
      if (why !== undefined) return `aggregator ${String(config.aggregator)}: ${why} (FT326)`;
      const refusal = aggregatorRefusal(String(config.algorithm), aggregatorOf(runStages(config as unknown as ChainOptions, 1, 1)));
      return refusal === undefined ? undefined : `--algorithm ${String(config.algorithm)} cannot take --aggregator ${String(config.aggregator)}: ${refusal}`;
    },
  },
  {
    keys: ["secureGroupMin", "clientsPerRound"],
    problem: ({ secureGroupMin, clientsPerRound }) =>
      typeof secureGroupMin === "number" && typeof clientsPerRound === "number" && secureGroupMin > clientsPerRound
        ? `a secure group of ${secureGroupMin} clients needs a cohort at least that large, not --clients-per-round ${clientsPerRound}`
        : undefined,
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
    keys: ["evalClients", "personalizeEpochs", "clientHoldout"],
    problem: ({ evalClients, personalizeEpochs, clientHoldout }) =>
      clientHoldout === 0 && (Number(evalClients) > 0 || Number(personalizeEpochs) > 0)
        ? "federated and personalization evaluation run on each client's held-out data: give --client-holdout a share above 0 (0.2, say)"
        : undefined,
  },
  {
    keys: ["minClients", "aggregator"],
    problem: ({ aggregator, minClients }) =>
      chainHas(aggregator, "dp") && Number(minClients) > 1
        ? `a DP round runs whatever its Poisson cohort's size (skipping one would release that size outside the accountant): --min-clients does not go with --aggregator dp`
        : undefined,
  },
  {
    keys: ["topK", "model"],
    problem: ({ topK, model }) => {
      const classes = textModels.includes(String(model)) ? 96 : 10;
      return Number(topK) > classes ? `top-${String(topK)} accuracy needs at least ${String(topK)} classes; model ${String(model)} has ${classes}` : undefined;
    },
  },
  {
    keys: ["overwrite", "resume"],
    problem: ({ resume, overwrite }) =>
      resume === true && overwrite === true ? "--resume continues the run in --out, --overwrite deletes it: give one" : undefined,
  },
];
