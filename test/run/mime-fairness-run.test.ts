/**
 * `fedtensor run --algorithm mime | mimelite | qffl | afl`: each trains, its server state
 * (Mime's base optimiser state, AFL's lambda) is checkpointed, and a run stopped after 2 rounds
 * and resumed ends exactly where an uninterrupted run of 4 ends. MimeLite and q-FFL stream
 * their cohort in chunks like FedAvg; Mime (two exchanges) runs it whole. Their options are
 * checked like every other (FT305).
 */
import { describe, expect, test } from "vitest";
import { initialMimeState, mimeProgram } from "../../src/lib/algorithms/mime.js";
import { qfflProgram } from "../../src/lib/algorithms/qffl.js";
import { labelledDataset } from "../../src/lib/data/dataset.js";
import { federate, roundCohort, sampleRound } from "../../src/lib/data/federated.js";
import { partitionIid } from "../../src/lib/data/partition.js";
import { Rng } from "../../src/lib/random.js";
import { loadLatestCheckpoint } from "../../src/lib/run/checkpoint.js";
import { cohortData, runOnCohort } from "../../src/lib/run/cohort.js";
import { cachedForm } from "../../src/runtime/mapreduce.js";
import { loadRunConfig, validateRunConfig } from "../../src/lib/run/config.js";
import { readMetrics } from "../../src/lib/run/metrics.js";
import { train } from "../../src/lib/run/train.js";
import { host, read, tiny } from "../lib/helpers.js";
import { tempDir } from "./temp-dir.js";
import { deadline } from "../helpers/deadline.js";

const small = { model: "logistic", clients: 20, clientsPerRound: 4, batchSize: 100, checkpointEvery: 1, seed: 7 } as const;
const quiet = { write: () => true, isTTY: false };
const rowsOf = (out: string) => readMetrics(`${out}/metrics.jsonl`).map(({ seconds: _, ...row }) => row);

type Leaf = { shape: number[]; data: Float32Array };

const cases = [
  { algorithm: "mime", options: {}, state: ["count", "trace"] },
  { algorithm: "mimelite", options: { mimeOptimizer: "adam", lr: 0.01 }, state: ["count", "mu", "nu"] },
  { algorithm: "qffl", options: { q: 0.5, lr: 0.3 }, state: [] },
  { algorithm: "afl", options: { aflLr: 0.01 }, state: ["lambda"] },
] as const;

describe.each(cases)("--algorithm $algorithm", ({ algorithm, options, state }) => {
  test("trains, checkpoints its server state, and resumes to the uninterrupted run's end", async () => {
    const [straight, resumed] = [tempDir(`ft-${algorithm}-`), tempDir(`ft-${algorithm}-resumed-`)];
    const config = { ...small, algorithm, ...options };
    const result = await train(validateRunConfig({ ...config, rounds: 4, out: straight }, "test"), quiet);
    expect(result.accuracy).toBeGreaterThan(0.5);

    await train(validateRunConfig({ ...config, rounds: 2, out: resumed }, "test"), quiet);
    const saved = await loadLatestCheckpoint(resumed);
    const server = (saved!.checkpoint.serverState as { server: Record<string, unknown> }).server;
    expect(Object.keys(server).sort()).toEqual([...state].sort());
    if (algorithm === "afl") {
      const lambda = (server.lambda as Leaf).data;
      expect(lambda).toHaveLength(20);
      expect(lambda.reduce((a, b) => a + b, 0)).toBeCloseTo(1, 5);
      expect(Math.min(...lambda)).toBeGreaterThanOrEqual(0);
      expect(new Set(lambda).size).toBeGreaterThan(1); // it moved from uniform
    }
    if (algorithm === "mime") expect((server.count as Leaf).data[0]).toBe(2);

    await train(validateRunConfig({ ...config, rounds: 4, out: resumed, resume: true }, "test"), quiet, { given: ["rounds", "resume", "out"] });
    expect(rowsOf(resumed)).toEqual(rowsOf(straight));
  }, deadline(120_000));
});

describe("their options", () => {
  test("defaults, and each applies only with its algorithm", async () => {
    expect(await loadRunConfig(["--algorithm", "mime"])).toMatchObject({ mimeOptimizer: "momentum", mimeMomentum: 0.9, serverLr: 1 });
    expect(await loadRunConfig(["--algorithm", "qffl"])).toMatchObject({ q: 1 });
    expect(await loadRunConfig(["--algorithm", "afl", "--client-optimizer", "adam"])).toMatchObject({ aflLr: 0.001, clientOptimizer: "adam" });
    const mimeAdam = await loadRunConfig(["--algorithm", "mimelite", "--mime-optimizer", "adam"]);
    expect(mimeAdam.mimeMomentum).toBeUndefined();
    await expect(loadRunConfig(["--q", "2"])).rejects.toThrow("FT305: --q: applies only with --algorithm qffl, not fedavg");
    await expect(loadRunConfig(["--algorithm", "mime", "--afl-lr", "0.1"])).rejects.toThrow("FT305: --afl-lr: applies only with --algorithm afl, not mime");
    await expect(loadRunConfig(["--algorithm", "mime", "--mime-optimizer", "adam", "--mime-momentum", "0.5"])).rejects.toThrow(
      "FT305: --mime-momentum: applies only with --mime-optimizer momentum | nesterov, not adam",
    );
    await expect(loadRunConfig(["--algorithm", "qffl", "--q", "-1"])).rejects.toThrow("FT305: --q");
    await expect(loadRunConfig(["--algorithm", "mime", "--mime-optimizer", "lion"])).rejects.toThrow("FT305: --mime-optimizer");
  });
});

describe("chunked cohorts", () => {
  const x = Float32Array.from({ length: 240 * 2 }, (_, i) => Math.sin(i * 0.7));
  const y = Int32Array.from({ length: 240 }, (_, i) => (x[2 * i]! + x[2 * i + 1]! > 0 ? 1 : 0));
  const train = labelledDataset("train", { x, y, featureShape: [2], numClasses: 2 });
  const data = federate(train, train, partitionIid(240, 12, Rng.fromSeed(4)));
  const roundOptions = { rng: Rng.fromSeed(2), round: 1, clientsPerRound: 8, batchSize: 5 };
  const params = { w: host([2, 2], [0.3, -0.2, 0.1, 0.4]), b: host([2], [0.05, -0.05]) };
  const settings = { chunkClients: 3, options: { backend: "onnx" } } as const;
  const rounds = {
    mimelite: { program: mimeProgram(tiny, "mimelite"), inputs: { params, lr: 0.1, serverLr: 1, state: initialMimeState(tiny, params) }, streams: true },
    qffl: { program: qfflProgram(tiny), inputs: { params, lr: 0.3, q: 1 }, streams: true },
    mime: { program: mimeProgram(tiny, "mime"), inputs: { params, lr: 0.1, serverLr: 1, state: initialMimeState(tiny, params) }, streams: false },
  };

  test.each(Object.entries(rounds))("%s: chunks of 3 give the whole round's result", async (_name, { program, inputs, streams }) => {
    const whole = await read(await program.run({ ...inputs, ...cohortData(roundCohort(data, roundOptions)) } as never));
    const chunked = await read(await runOnCohort(program as never, inputs, sampleRound(data, roundOptions), settings));
    if (streams) {
      expect(() => cachedForm(program.ir, 8)).not.toThrow();
      const flat = (t: unknown): number[] => (typeof t === "number" ? [t] : Object.values(t as object).flatMap(flat));
      flat(chunked).forEach((v, i) => expect(Math.abs(v - flat(whole)[i]!)).toBeLessThanOrEqual(2e-6 * Math.max(1, Math.abs(flat(whole)[i]!))));
    } else {
      expect(() => cachedForm(program.ir, 8)).toThrow(/^FT313/);
      expect(chunked).toEqual(whole);
    }
  });
});

