/**
 * `fedtensor run`'s optimiser options: which algorithms take them, their defaults (DiLoCo's
 * inner AdamW), FT305 for what does not apply or is out of range, the learning rate each
 * round gets from --lr-schedule, and a short run that trains with them.
 */
import { describe, expect, test } from "vitest";
import { FedTensorError } from "../../src/index.js";
import { loadRunConfig, validateRunConfig } from "../../src/lib/run/config.js";
import { readMetrics } from "../../src/lib/run/metrics.js";
import { clientOptimizerFor, roundLearningRates } from "../../src/lib/run/optimizers.js";
import { train } from "../../src/lib/run/train.js";
import { tempDir } from "./temp-dir.js";
import { deadline } from "../helpers/deadline.js";

describe("options", () => {
  test("the client optimiser and its settings apply where clients train locally", async () => {
    const adam = await loadRunConfig(["--algorithm", "fedavgm", "--client-optimizer", "adam", "--client-beta2", "0.99", "--clip-norm", "5"]);
    expect(adam).toMatchObject({ algorithm: "fedavgm", serverMomentum: 0.9, clientOptimizer: "adam", clientBeta1: 0.9, clientBeta2: 0.99, clipNorm: 5 });
    expect(adam.clientMomentum).toBeUndefined();
    expect(await loadRunConfig(["--client-optimizer", "nesterov"])).toMatchObject({ clientOptimizer: "nesterov", clientMomentum: 0.9 });
    // FedSGD and SCAFFOLD train no client optimiser (SCAFFOLD's control update assumes plain SGD).
    const fedsgd = await loadRunConfig(["--algorithm", "fedsgd"]);
    expect(fedsgd.clientOptimizer).toBeUndefined();
    expect(clientOptimizerFor(fedsgd)).toBeUndefined();
    expect((await loadRunConfig(["--algorithm", "diloco", "--client-optimizer", "sgd"])).weightDecay).toBeUndefined();
    expect(await loadRunConfig(["--algorithm", "diloco"])).toMatchObject({ clientOptimizer: "adamw", weightDecay: 0.1 });
    expect(await loadRunConfig(["--client-optimizer", "adamw"])).toMatchObject({ clientOptimizer: "adamw", weightDecay: 0.01 });
  });

  test.each([
    [["--client-optimizer", "lamb"], "--client-optimizer", 'expected sgd | momentum | nesterov | adam | adamw | adagrad | rmsprop | yogi, got "lamb"'],
    [["--algorithm", "scaffold", "--client-optimizer", "adam"], "--client-optimizer", "applies only with --algorithm fedavg | fedavgm | fedprox | fedadam | fedyogi | fedadagrad | diloco | afl | fedper | ditto, not scaffold"],
    [["--client-momentum", "0.5"], "--client-momentum", "applies only with --client-optimizer momentum | nesterov, not sgd"],
    [["--client-optimizer", "momentum", "--client-momentum", "1"], "--client-momentum", "expected number 0 <= x < 1, got 1"],
    [["--client-optimizer", "adam", "--weight-decay", "0.1"], "--weight-decay", "applies only with --client-optimizer adamw, not adam"],
    [["--clip-norm", "-1"], "--clip-norm", "expected number >= 0, got -1"],
    [["--lr-schedule", "linear"], "--lr-schedule", 'expected constant | exponential | step | cosine | warmup-cosine, got "linear"'],
    [["--decay-rate", "0.5"], "--decay-rate", "applies only with --lr-schedule exponential | step, not constant"],
    [["--lr-schedule", "step", "--decay-rate", "0"], "--decay-rate", "expected number 0 < x <= 1, got 0"],
    [["--lr-schedule", "warmup-cosine", "--warmup-rounds", "20"], "--warmup-rounds", "the warm-up (20 rounds) must end before the last round (--rounds 20)"],
    [["--server-momentum", "0.5"], "--server-momentum", "applies only with --algorithm fedavgm, not fedavg"],
  ])("rejects %j with FT305", async (args, option, why) => {
    const error = await loadRunConfig(args).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(FedTensorError);
    expect(error).toMatchObject({ code: "FT305", params: { option, why } });
  });
});

describe("the learning rate of each round", () => {
  const rates = async (args: string[], rounds: number[]) => {
    const at = roundLearningRates(await loadRunConfig(["--lr", "0.2", "--rounds", "10", ...args]));
    return rounds.map(at);
  };
  const close = (got: number[], want: number[]) => got.forEach((x, i) => expect(x).toBeCloseTo(want[i]!, 6));

  test("constant", async () => close(await rates([], [1, 5, 10]), [0.2, 0.2, 0.2]));
  test("exponential and step decay count the rounds before", async () => {
    close(await rates(["--lr-schedule", "exponential", "--decay-rate", "0.5", "--decay-rounds", "2"], [1, 2, 3, 5]), [0.2, 0.2 * 0.5 ** 0.5, 0.1, 0.05]);
    close(await rates(["--lr-schedule", "step", "--decay-rate", "0.1", "--decay-rounds", "4"], [1, 4, 5, 9, 10]), [0.2, 0.2, 0.02, 0.002, 0.002]);
  });
  test("cosine over --rounds, to --min-lr-fraction", async () => {
    const cosine = (k: number) => 0.2 * (0.9 * 0.5 * (1 + Math.cos((Math.PI * k) / 10)) + 0.1);
    close(await rates(["--lr-schedule", "cosine", "--min-lr-fraction", "0.1"], [1, 4, 10]), [0.2, cosine(3), cosine(9)]);
  });
  test("warm-up from 0, then cosine", async () => {
    const cosine = (k: number) => 0.2 * 0.5 * (1 + Math.cos((Math.PI * k) / 8));
    close(await rates(["--lr-schedule", "warmup-cosine", "--warmup-rounds", "2"], [1, 2, 3, 4, 10]), [0, 0.1, 0.2, cosine(1), cosine(7)]);
  });
});

test("a FedAvgM run with clipped Adam clients and a warm-up schedule trains", async () => {
  const out = tempDir("ft-optimizers-");
  const config = validateRunConfig(
    {
      model: "logistic",
      clients: 20,
      clientsPerRound: 4,
      batchSize: 50,
      rounds: 3,
      algorithm: "fedavgm",
      clientOptimizer: "adam",
      lr: 0.003,
      clipNorm: 5,
      lrSchedule: "warmup-cosine",
      warmupRounds: 1,
      checkpointEvery: 0,
      out,
    },
    "test",
  );
  const result = await train(config, { write: () => true, isTTY: false });
  const rows = readMetrics(`${out}/metrics.jsonl`);
  expect(rows.map((r) => r.round)).toEqual([1, 2, 3]);
  // Round 1 trains at learning rate 0 (the warm-up's start): the model does not move.
  expect(rows[0]!.test_accuracy).toBeLessThan(0.3);
  expect(result.accuracy).toBeGreaterThan(0.8);
}, deadline(60_000));
