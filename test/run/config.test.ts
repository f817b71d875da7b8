import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { FedTensorError } from "../../src/errors/error.js";
import { loadRunArguments, loadRunConfig, parseRunFlags, runOptions, validateRunConfig } from "../../src/lib/run/config.js";
import { formatRunOptionsHelp, formatRunOptionsMarkdown, runOptionRows } from "../../src/lib/run/options-help.js";
import { tempDir } from "./temp-dir.js";

const defaults = {
  rounds: 20,
  clients: 100,
  clientsPerRound: 10,
  chunkClients: 100,
  stateMemory: 256,
  dropout: 0,
  minClients: 1,
  localEpochs: 1,
  batchSize: 10,
  lr: 0.1,
  serverLr: 1,
  partition: "iid",
  seed: 0,
  backend: "onnx",
  engine: "local",
  engineTimeout: 30,
  waitNotice: 10,
  out: "runs/latest",
  checkpointEvery: 5,
  keepCheckpoints: 3,
  resume: false,
  overwrite: false,
  algorithm: "fedavg",
  model: "logistic",
  dataset: "mnist",
  evalEvery: 1,
  aggregator: "fedavg",
  attack: "none",
  quantizeBits: 0,
  clientOptimizer: "sgd",
  clipNorm: 0,
  lrSchedule: "constant",
  clientHoldout: 0,
  evalClients: 0,
  topK: 1,
  personalizeEpochs: 0,
  evalNoise: 5,
};

async function configFile(content: unknown): Promise<string> {
  const path = join(tempDir("ft-config-"), "run.json");
  await writeFile(path, typeof content === "string" ? content : JSON.stringify(content));
  return path;
}

/** The FT code and message params of the error that `load` rejects with. */
async function failure(load: Promise<unknown>): Promise<{ code: string; params: unknown }> {
  const error = await load.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(FedTensorError);
  const { code, params } = error as FedTensorError;
  return { code, params };
}

describe("run config from flags", () => {
  it("gives the documented defaults, without options of other algorithms", async () => {
    expect(await loadRunConfig([])).toEqual(defaults);
  });

  it("parses every kind of value", async () => {
    const config = await loadRunConfig([
      "--rounds", "50", "--clients-per-round=5", "--lr", "2.5e-2", "--partition", "dirichlet", "--alpha", ".3",
      "--backend", "cpu", "--out", "runs/a", "--resume", "--algorithm", "fedadam", "--beta2", "0.999",
      "--model", "char", "--dataset", "sotu", "--seed", "4294967295",
    ]);
    expect(config).toEqual({
      ...defaults,
      rounds: 50,
      clientsPerRound: 5,
      lr: 0.025,
      partition: "dirichlet",
      alpha: 0.3,
      backend: "cpu",
      out: "runs/a",
      resume: true,
      algorithm: "fedadam",
      serverLr: 0.03,
      beta1: 0.9,
      beta2: 0.999,
      tau: 0.001,
      model: "char",
      dataset: "sotu",
      seed: 4294967295,
    });
  });

  it("fills algorithm-specific defaults for the chosen algorithm only", async () => {
    expect(await loadRunConfig(["--algorithm", "fedprox"])).toEqual({ ...defaults, algorithm: "fedprox", mu: 0.01 });
    expect(await loadRunConfig(["--algorithm", "diloco", "--outer-momentum", "0"])).toEqual({
      ...defaults,
      algorithm: "diloco",
      outerMomentum: 0,
      // DiLoCo's inner optimiser is AdamW with the paper's weight decay.
      clientOptimizer: "adamw",
      clientBeta1: 0.9,
      clientBeta2: 0.999,
      weightDecay: 0.1,
    });
    expect(await loadRunConfig(["--algorithm", "fedadagrad"])).toEqual({
      ...defaults,
      algorithm: "fedadagrad",
      serverLr: 0.03,
      beta1: 0.9,
      tau: 0.001,
    });
  });

  it("gives the adaptive server optimisers their own default server learning rate, which a flag overrides", async () => {
    expect((await loadRunConfig(["--algorithm", "fedyogi"])).serverLr).toBe(0.03);
    expect((await loadRunConfig(["--algorithm", "fedyogi", "--server-lr", "1"])).serverLr).toBe(1);
    expect((await loadRunConfig(["--algorithm", "scaffold"])).serverLr).toBe(1);
    expect(runOptionRows().find((r) => r.key === "serverLr")!.default).toBe("1, 0.03 with --algorithm fedadam | fedyogi | fedadagrad");
  });

  it("returns the config file path apart from the values", () => {
    expect(parseRunFlags(["run.json", "--rounds", "3"])).toEqual({ configPath: "run.json", values: { rounds: 3 } });
  });

  const badFlags: [string[], string, string][] = [
    [["--round", "3"], "--round", "unknown flag"],
    [["--clientsPerRound", "3"], "--clientsPerRound", "unknown flag (did you mean --clients-per-round?)"],
    [["-r", "3"], "-r", "unknown flag"],
    [["--rounds", "3", "--rounds", "4"], "--rounds", "given more than once"],
    [["--rounds"], "--rounds", "needs a value (integer >= 1)"],
    [["--lr", "--rounds", "3"], "--lr", "needs a value (number > 0)"],
    [["--resume=yes"], "--resume", "takes no value"],
    [["--rounds", "abc"], "--rounds", 'expected integer >= 1, got "abc"'],
    [["--rounds", "1.5"], "--rounds", "expected integer >= 1, got 1.5"],
    [["--rounds", "0"], "--rounds", "expected integer >= 1, got 0"],
    [["--checkpoint-every", "-1"], "--checkpoint-every", "expected integer >= 0, got -1"],
    [["--wait-notice", "0"], "--wait-notice", "expected integer 1 <= x <= 3600, got 0"],
    [["--seed", "4294967296"], "--seed", "expected integer 0 <= x <= 4294967295, got 4294967296"],
    [["--lr", "0"], "--lr", "expected number > 0, got 0"],
    [["--lr", "0x10"], "--lr", 'expected number > 0, got "0x10"'],
    [["--lr="], "--lr", 'expected number > 0, got ""'],
    [["--algorithm", "fedadam", "--beta1", "1"], "--beta1", "expected number 0 <= x < 1, got 1"],
    [["--partition", "random"], "--partition", 'expected iid | shards | dirichlet | quantity, got "random"'],
    [["--out="], "--out", 'expected non-empty text, got ""'],
    [["--mu", "0.1"], "--mu", "applies only with --algorithm fedprox, not fedavg"],
    [["--algorithm", "fedprox", "--tau", "0.1"], "--tau", "applies only with --algorithm fedadam | fedyogi | fedadagrad, not fedprox"],
    [["--alpha", "0.1"], "--alpha", "applies only with --partition dirichlet | quantity, not iid"],
    [["--dataset", "sotu"], "--dataset", "model logistic does not fit dataset sotu: char, transformer, lstm go with sotu, the others with mnist and fashion-mnist"],
    [["--model", "char"], "--model", "model char does not fit dataset mnist: char, transformer, lstm go with sotu, the others with mnist and fashion-mnist"],
    [["--model", "lstm", "--dataset", "fashion-mnist"], "--model", "model lstm does not fit dataset fashion-mnist: char, transformer, lstm go with sotu, the others with mnist and fashion-mnist"],
    [["a.json", "b.json"], "b.json", "only one config file may be given"],
  ];
  it.each(badFlags)("rejects %j with FT305", async (args, option, why) => {
    expect(await failure(loadRunConfig(args))).toEqual({ code: "FT305", params: { option, why } });
  });

  it("writes the message from the catalogue", async () => {
    await expect(loadRunConfig(["--rounds", "0"])).rejects.toThrow("FT305: --rounds: expected integer >= 1, got 0");
  });

  it("refuses a DP run without noise (z = 0 releases the clipped sum exactly: no finite epsilon)", async () => {
    await expect(loadRunConfig(["--aggregator", "dp", "--dp-noise", "0"])).rejects.toThrow("FT305: --dp-noise: expected number > 0, got 0");
  });
});

describe("run config from a file", () => {
  it("reads camelCase keys and lets flags override them", async () => {
    const path = await configFile({ rounds: 7, algorithm: "fedprox", mu: 0.5, lr: 0.2 });
    expect(await loadRunConfig([path, "--lr", "0.3"])).toEqual({
      ...defaults,
      rounds: 7,
      algorithm: "fedprox",
      mu: 0.5,
      lr: 0.3,
    });
  });

  it("blames the file key or the flag, whichever gave the value", async () => {
    const path = await configFile({ mu: 0.5 });
    expect(await failure(loadRunConfig([path]))).toEqual({
      code: "FT305",
      params: { option: `mu (in ${path})`, why: "applies only with --algorithm fedprox, not fedavg" },
    });
    expect(await failure(loadRunConfig([path, "--algorithm", "fedsgd"]))).toEqual({
      code: "FT305",
      params: { option: `mu (in ${path})`, why: "applies only with --algorithm fedprox, not fedsgd" },
    });
    const dirichlet = await configFile({ partition: "dirichlet" });
    expect(await failure(loadRunConfig([dirichlet, "--alpha", "-1"]))).toEqual({
      code: "FT305",
      params: { option: "--alpha", why: "expected number > 0, got -1" },
    });
  });

  const badFiles: [unknown, string, string][] = [
    [{ "clients-per-round": 3 }, "clients-per-round", "unknown config key (did you mean clientsPerRound?)"],
    [{ epochs: 3 }, "epochs", "unknown config key"],
    [{ rounds: "20" }, "rounds", 'expected integer >= 1, got "20"'],
    [{ resume: "yes" }, "resume", 'expected true | false, got "yes"'],
    [{ lr: null }, "lr", "expected number > 0, got null"],
    [{ backend: "tpu" }, "backend", 'expected onnx | wasm | cpu | webgpu | tensorflow, got "tpu"'],
    [{ engine: "127.0.0.1:6379" }, "engine", 'expected local | redis://host:port, got "127.0.0.1:6379"'],
  ];
  it.each(badFiles)("rejects %j with FT305", async (content, key, why) => {
    const path = await configFile(content);
    expect(await failure(loadRunConfig([path]))).toEqual({ code: "FT305", params: { option: `${key} (in ${path})`, why } });
  });

  it("reports a missing, malformed or non-object file as FT304", async () => {
    const missing = join(tempDir("ft-config-"), "missing.json");
    const missingError = await failure(loadRunConfig([missing]));
    expect(missingError.code).toBe("FT304");
    expect(missingError.params).toMatchObject({ path: missing, why: expect.stringContaining("cannot read the config file") });

    const malformed = await configFile("{ rounds: 3 }");
    const malformedError = await failure(loadRunConfig([malformed]));
    expect(malformedError.params).toMatchObject({ path: malformed, why: expect.stringContaining("not valid JSON") });

    const array = await configFile([1, 2]);
    expect(await failure(loadRunConfig([array]))).toEqual({
      code: "FT304",
      params: { path: array, why: "a config file holds one JSON object of options" },
    });
  });
});

describe("FEDTENSOR_BACKEND", () => {
  const withBackendVariable = async <T>(value: string, body: () => Promise<T>): Promise<T> => {
    const before = process.env.FEDTENSOR_BACKEND;
    process.env.FEDTENSOR_BACKEND = value;
    try {
      return await body();
    } finally {
      if (before === undefined) delete process.env.FEDTENSOR_BACKEND;
      else process.env.FEDTENSOR_BACKEND = before;
    }
  };

  it("chooses the backend when neither a flag nor the file does, as for programs", async () => {
    const path = await configFile({ backend: "cpu" });
    await withBackendVariable("wasm", async () => {
      expect((await loadRunConfig([])).backend).toBe("wasm");
      expect((await loadRunConfig([path])).backend).toBe("cpu");
      expect((await loadRunConfig([path, "--backend", "onnx"])).backend).toBe("onnx");
    });
  });

  it("is FT305 naming the variable when it names no backend", async () => {
    expect(await withBackendVariable("tpu", () => failure(loadRunConfig([])))).toEqual({
      code: "FT305",
      params: { option: "FEDTENSOR_BACKEND", why: 'expected onnx | wasm | cpu | webgpu | tensorflow, got "tpu"' },
    });
  });
});

describe("options and --resume", () => {
  it("lists the options given by flag or file, which --resume compares with the checkpoint's", async () => {
    const { config, given } = await loadRunArguments([await configFile({ seed: 3, lr: 0.5 }), "--resume", "--rounds", "7"]);
    expect([...given].sort()).toEqual(["lr", "resume", "rounds", "seed"]);
    expect(config).toMatchObject({ seed: 3, lr: 0.5, rounds: 7, resume: true, overwrite: false });
  });

  it("only options that leave the computation unchanged may change on resume", () => {
    const changeable = Object.entries(runOptions).filter(([, spec]) => "mayChangeOnResume" in spec).map(([key]) => key);
    expect(changeable.sort()).toEqual(["accountant", "backend", "checkpointEvery", "dpTargetEpsilon", "engine", "engineTimeout", "evalClients", "evalEvery", "keepCheckpoints", "maxEpsilon", "out", "overwrite", "personalizeEpochs", "resume", "rounds", "stateMemory", "waitNotice"]);
  });

  it("--resume with --overwrite is FT305", async () => {
    await expect(loadRunConfig(["--resume", "--overwrite"])).rejects.toThrow(
      "FT305: --overwrite: --resume continues the run in --out, --overwrite deletes it: give one",
    );
  });
});

describe("stored configs and documentation", () => {
  it("validates a config stored in a checkpoint back to itself", async () => {
    const config = await loadRunConfig(["--algorithm", "fedyogi", "--rounds", "3"]);
    const stored = JSON.parse(JSON.stringify(config)) as Record<string, unknown>;
    expect(validateRunConfig(stored, "checkpoint-3")).toEqual(config);
    expect(() => validateRunConfig({ ...stored, rounds: -2 }, "checkpoint-3")).toThrow(
      "FT305: rounds (in checkpoint-3): expected integer >= 1, got -2",
    );
  });

  it("documents every option once, with its default and range", () => {
    const rows = runOptionRows();
    expect(rows.map((r) => r.key)).toEqual(Object.keys(runOptions));
    expect(rows.find((r) => r.key === "mu")).toEqual({
      flag: "--mu",
      key: "mu",
      default: "0.01",
      range: "number >= 0",
      appliesTo: "--algorithm fedprox",
      description: "FedProx proximal term weight",
    });
    const help = formatRunOptionsHelp().split("\n");
    expect(help).toHaveLength(rows.length);
    expect(help[0]).toMatch(/^ {2}--rounds +Federated rounds to run \(integer >= 1; default 20\)$/);
    expect(help).toContain("  --partition           How examples are split among clients (iid | shards | dirichlet | quantity; default iid)");
    const markdown = formatRunOptionsMarkdown().split("\n");
    expect(markdown).toHaveLength(rows.length + 2);
    expect(markdown).toContain("| `--partition` | `partition` | iid | iid \\| shards \\| dirichlet \\| quantity |  | How examples are split among clients |");
  });
});
