/**
 * Streamed cohorts and ragged clients: a round run in bucketed chunks through its MapReduce
 * form gives the whole, padded round's results (to float32 rounding: the sums group
 * differently) and the same bits every time; the buckets pad each client to within 1.5x of
 * its own batches, not to the cohort's largest; SCAFFOLD, which has no MapReduce form, runs whole;
 * per-client inputs of any dtype and shape reach each chunk as its clients' rows, and one that
 * a worker draws (each client's own randomness) goes to an engine as its shape only.
 */
import { describe, expect, test } from "vitest";
import { fedAvgProgram } from "../../src/lib/algorithms/fedavg.js";
import { fedOptProgram } from "../../src/lib/algorithms/fedopt.js";
import { fedProxProgram } from "../../src/lib/algorithms/fedprox.js";
import { initialAdaptiveState } from "../../src/lib/algorithms/server-optimizers.js";
import { labelledDataset } from "../../src/lib/data/dataset.js";
import { federate, roundCohort, sampleRound } from "../../src/lib/data/federated.js";
import { partitionDirichlet } from "../../src/lib/data/partition.js";
import { aggregatorOf } from "../../src/lib/aggregators/aggregator.js";
import { aggregationStages } from "../../src/lib/aggregators/stages.js";
import { bucketSteps, cohortChunks, cohortData, perClientSlice, runOnCohort, type ChunkEngine, type PlacedChunk } from "../../src/lib/run/cohort.js";
import { Rng } from "../../src/lib/random.js";
import { host, read, tiny } from "../lib/helpers.js";

/** 400 two-feature examples of two classes, split among 30 clients by a skewed Dirichlet: sizes from 1 to dozens. */
function raggedData() {
  const rng = Rng.fromSeed(7);
  const y = Int32Array.from({ length: 400 }, () => rng.int(0, 2));
  const x = Float32Array.from({ length: 800 }, (_, i) => rng.normal(y[i >> 1]! === 0 ? -1 : 1, 1));
  const train = labelledDataset("train", { x, y, featureShape: [2], numClasses: 2 });
  const partition = partitionDirichlet(y, 2, { numClients: 30, alpha: 0.3, minExamplesPerClient: 1 }, rng.fork("partition"));
  return federate(train, train, partition);
}

const data = raggedData();
const roundOptions = { rng: Rng.fromSeed(3), round: 1, clientsPerRound: 24, batchSize: 4 };
const params = { w: host([2, 2], [0.3, -0.2, 0.1, 0.4]), b: host([2], [0.05, -0.05]) };

function closeTrees(g: unknown, w: unknown): void {
  const flat = (t: unknown): number[] => (typeof t === "number" ? [t] : Object.values(t as object).flatMap(flat));
  const [gs, ws] = [flat(g), flat(w)];
  expect(gs.length).toBe(ws.length);
  gs.forEach((v, i) => expect(Math.abs(v - ws[i]!)).toBeLessThanOrEqual(2e-6 * Math.max(1, Math.abs(ws[i]!))));
}

describe("size buckets", () => {
  test("round a client's batches up to 1, 2, 3, 4, 6, 8, 12, 16, ...: at most 1.5x", () => {
    expect([1, 2, 3, 4, 5, 6, 7, 8, 9, 13, 17, 100].map(bucketSteps)).toEqual([1, 2, 3, 4, 6, 6, 8, 8, 12, 16, 24, 128]);
    for (let s = 1; s < 2000; s++) expect(bucketSteps(s) / s).toBeLessThanOrEqual(1.5);
  });

  test("chunks hold one bucket each, at most chunkClients clients, in bucket then client order", () => {
    const sample = sampleRound(data, roundOptions);
    const chunks = cohortChunks(sample.clients, sample.steps, 5);
    expect(chunks.flatMap((c) => [...c.clients]).sort((a, b) => a - b)).toEqual([...sample.clients]);
    expect(chunks.every((c) => c.clients.length <= 5 && [...c.clients].every((client) => bucketSteps(sample.steps(client)) === c.steps))).toBe(true);
    expect(chunks.map((c) => c.steps)).toEqual([...chunks.map((c) => c.steps)].sort((a, b) => a - b));
  });

  test("streamed chunks copy slots in proportion to the real batches, not clients x the largest", () => {
    const sample = sampleRound(data, roundOptions);
    const real = [...sample.clients].reduce((n, c) => n + sample.steps(c), 0);
    const streamed = cohortChunks(sample.clients, sample.steps, 5).reduce((n, c) => n + c.clients.length * c.steps, 0);
    const padded = roundCohort(data, roundOptions).mask.shape[1]! * sample.clients.length;
    expect(streamed).toBeLessThanOrEqual(1.5 * real);
    // Dirichlet(0.3) sizes are skewed: padding every client to the largest costs several times the real batches.
    expect(padded).toBeGreaterThan(2.5 * real);
  });
});

describe("a streamed round", () => {
  const algorithms = {
    fedavg: { program: fedAvgProgram(tiny), inputs: { params, lr: 0.3 } },
    fedprox: { program: fedProxProgram(tiny), inputs: { params, lr: 0.3, mu: 0.5 } },
    fedadam: { program: fedOptProgram(tiny, { optimizer: "adam", beta1: 0.9, beta2: 0.99, tau: 1e-3 }), inputs: { params, lr: 0.3, serverLr: 0.1, state: initialAdaptiveState(params as never, 1e-3) } },
  };
  for (const [name, { program, inputs }] of Object.entries(algorithms)) {
    test(`${name}: bucketed chunks of 5 give the whole padded round's result, the same bits every time`, async () => {
      const sample = sampleRound(data, roundOptions);
      const whole = await program.run({ ...inputs, ...cohortData(roundCohort(data, roundOptions)) } as never);
      const settings = { chunkClients: 5, options: { backend: "onnx" } };
      const streamed = await runOnCohort(program as never, inputs, sample, settings);
      const again = await runOnCohort(program as never, inputs, sample, settings);
      const first = await read(streamed);
      expect(await read(again)).toEqual(first);
      closeTrees(first, await read(whole));
    });
  }
});

describe("per-client inputs", () => {
  const chain = aggregatorOf([aggregationStages.attack("sign-flip")]);
  const program = fedAvgProgram(tiny, { aggregator: chain });
  const inputs = { params, lr: 0.3, attackScale: 1, key: [0, 1], round: 1 };
  /** An engine that keeps the chunks it is given and runs none. */
  const capturing = () => {
    const seen: PlacedChunk[][] = [];
    const engine: ChunkEngine = {
      partials: (_form, _tree, chunks) => {
        seen.push([...chunks]);
        return () => {
          throw new Error("not run");
        };
      },
    };
    return { seen, engine };
  };

  test("each chunk, here or in an engine's job, takes its clients' rows, whatever the dtype and shape", async () => {
    const sample = sampleRound(data, roundOptions);
    const n = sample.clients.length;
    const keys = { shape: [n, 2], data: Int32Array.from({ length: 2 * n }, (_, i) => 1000 + i) };
    const malicious = { shape: [n], data: Float32Array.from({ length: n }, (_, p) => p % 2) };
    const { seen, engine } = capturing();
    await expect(runOnCohort(program as never, inputs, sample, { chunkClients: 5, options: { backend: "onnx" }, engine, perClient: { malicious, keys } })).rejects.toThrow("not run");
    const chunks = seen[0]!;
    expect(chunks.flatMap((c) => [...c.positions]).sort((a, b) => a - b)).toEqual([...Array(n).keys()]);
    for (const chunk of chunks) {
      expect([...chunk.positions].map((p) => sample.clients[p])).toEqual([...chunk.clients]);
      expect(chunk.perClient.malicious).toEqual({ shape: [chunk.clients.length], data: Float32Array.from(chunk.positions, (p) => p % 2) });
      expect(chunk.perClient.keys).toEqual({ shape: [chunk.clients.length, 2], data: Int32Array.from([...chunk.positions].flatMap((p) => [1000 + 2 * p, 1001 + 2 * p])) });
    }
    expect(perClientSlice({ keys }, [2, 0])).toEqual({ keys: { shape: [2, 2], data: Int32Array.of(1004, 1005, 1000, 1001) } });
  });

  test("one that a worker draws goes to an engine as its shape only, with groups of groupMin, and rides along in this process", async () => {
    const sample = sampleRound(data, roundOptions);
    const malicious = { shape: [sample.clients.length], data: new Float32Array(sample.clients.length), drawnByWorker: true };
    const { seen, engine } = capturing();
    const settings = { chunkClients: 5, options: { backend: "onnx" }, perClient: { malicious } } as const;
    await expect(runOnCohort(program as never, inputs, sample, { ...settings, engine, groupMin: 4 })).rejects.toThrow("not run");
    for (const chunk of seen[0]!) {
      expect(chunk.perClient).toEqual({});
      expect(chunk.drawn).toEqual({ malicious: [chunk.clients.length] });
      expect(chunk.clients.length).toBeGreaterThanOrEqual(4);
    }
    await expect(runOnCohort(program as never, inputs, sample, { ...settings, engine, groupMin: 6 })).rejects.toThrow(/^FT329: /);
    // No attacker: the sign-flip chain's round is FedAvg's.
    closeTrees(await read(await runOnCohort(program as never, inputs, sample, settings)), await read(await runOnCohort(fedAvgProgram(tiny) as never, { params, lr: 0.3 }, sample, settings)));
  });
});
