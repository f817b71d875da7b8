/**
 * examples/fedper-mnist.ts (docs/guide.md "Client state"): FedPer on private MNIST shards,
 * each client's head kept as client state, the body moved by a DP release only.
 */
import { expect, test } from "vitest";
import * as tf from "@tensorflow/tfjs";
import { fedPerRound, mnistShards, trainFedPer } from "../../examples/fedper-mnist.js";
import { Rng } from "../../src/lib/random.js";
import { deadline } from "../helpers/deadline.js";

test("the round keeps the heads on the clients and releases the body's deltas through dpSum only", () => {
  expect(fedPerRound.clientState).toEqual(["heads.w2", "heads.b2"]);
  expect(fedPerRound.signature).toContain("heads={<w2=f32[32,10],b2=f32[10]>}@CLIENTS(private)");
  expect(fedPerRound.signature).toMatch(/-> <params=<w1=f32\[784,32\],b1=f32\[32\]>@SERVER,heads=\{<w2=f32\[32,10\],b2=f32\[10\]>\}@CLIENTS\(private\)>\)$/);
  expect(fedPerRound.privacy).toEqual(["dpSum #0: Gaussian mechanism, clip 1, noise multiplier 0.5, rho = 2 zCDP per call, called once"]);
});

test("two rounds on 20 clients: the sampled clients' heads are their own, the others' the initial head", async () => {
  const rng = Rng.fromSeed(3);
  const data = mnistShards(20, rng);
  const { params, heads } = await trainFedPer(data, 2, 4, rng);
  const trained = Array.from({ length: 20 }, (_, c) => c).filter((c) => heads.has(c));
  expect(trained.length).toBeGreaterThanOrEqual(4);
  expect(trained.length).toBeLessThan(20);
  const bias = (c: number) => Array.from(heads.get(c).b2).join(",");
  expect(new Set(trained.map(bias)).size).toBe(trained.length);
  const untouched = Array.from({ length: 20 }, (_, c) => c).find((c) => !heads.has(c))!;
  expect(bias(untouched)).toBe(new Float32Array(10).join(","));
  tf.dispose(Object.values(params));
}, deadline(60_000));
