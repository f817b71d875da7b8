/**
 * SecAgg+ end to end over the wire format: the server's sum is exact in Z_M (the masks cancel)
 * and equals the plain sum of the clipped inputs within the quantization error, with and
 * without dropouts; with fewer than the threshold left the round aborts and reveals nothing.
 */
import { describe, expect, it } from "vitest";
import { type SecAggParams, defaultNumShares, majorityThreshold, numSharesForDropouts, resolveSecAggParams } from "../../src/deploy/secagg/index.js";
import { graphSeed, permutation, publicGraph, ringGraph } from "../../src/deploy/secagg/graph.js";
import { webCryptoRandomBytes } from "../../src/deploy/secagg/random.js";
import { ids, randomVectors, runRound, jsonOf } from "./secagg-helpers.js";

const base: SecAggParams = {
  round: 7,
  vector_length: 64,
  num_shares: 5,
  reconstruction_threshold: 3,
  clipping_range: 2,
  quantization_range: 2 ** 20,
  modulus_range: 2 ** 32,
};

/** The plain sum of the included clients' clipped values, and the worst quantization error allowed. */
function plainSum(vectors: ReadonlyMap<string, Float32Array>, included: readonly string[], p: SecAggParams): Float64Array {
  const out = new Float64Array(p.vector_length);
  const c = p.clipping_range;
  for (const id of included) {
    const v = vectors.get(id)!;
    for (let i = 0; i < out.length; i++) out[i]! += Math.min(c, Math.max(-c, v[i]!));
  }
  return out;
}

describe("SecAgg+ sum", () => {
  it("is the plain sum within one quantization step per client, for many random vectors", async () => {
    for (const n of [3, 6, 11]) {
      const vectors = randomVectors(ids(n), base.vector_length, 3); // some values outside [-2, 2]: clipped
      const run = await runRound(base, vectors);
      expect(run.outcome.kind).toBe("done");
      if (run.outcome.kind !== "done") return;
      const { result } = run.outcome;
      expect(result.clients).toBe(n);
      const step = (2 * base.clipping_range) / base.quantization_range;
      const want = plainSum(vectors, result.included, base);
      for (let i = 0; i < want.length; i++) expect(Math.abs(result.sum[i]! - want[i]!)).toBeLessThanOrEqual(n * step + 1e-9);
      expect([...run.clients.values()].some((c) => c.clipped > 0)).toBe(true);
    }
  });

  it("is exact in Z_M: the unmasked sum is the sum of the quantized values (masks cancel)", async () => {
    // quantization_range 2c makes the quantized value of an integer x exactly x + c: no rounding.
    const p: SecAggParams = { ...base, clipping_range: 1000, quantization_range: 2000, modulus_range: 2 ** 16 };
    const clientIds = ids(12);
    for (let trial = 0; trial < 5; trial++) {
      const vectors = new Map(clientIds.map((id) => [id, Float32Array.from({ length: p.vector_length }, () => Math.floor(Math.random() * 2001) - 1000)]));
      const run = await runRound({ ...p, round: trial }, vectors);
      if (run.outcome.kind !== "done") throw new Error(`aborted: ${JSON.stringify(run.outcome)}`);
      const want = plainSum(vectors, clientIds, p);
      for (let i = 0; i < want.length; i++) {
        expect(run.outcome.result.quantizedSum[i]).toBe(want[i]! + 12 * 1000);
        expect(run.outcome.result.sum[i]).toBe(want[i]);
      }
    }
  });

  it("recovers 30% of the clients dropping after their masked input, from their neighbours' seed shares", async () => {
    const clientIds = ids(20);
    const vectors = randomVectors(clientIds, base.vector_length, 1);
    const dropped = clientIds.filter((_, i) => i % 10 < 3); // 6 of 20
    // numSharesForDropouts: 13 shares and a threshold of 7, so any 6 dropped leave 7 shares of every seed.
    const numShares = numSharesForDropouts(20, dropped.length);
    expect([numShares, majorityThreshold(numShares)]).toEqual([13, 7]);
    const run = await runRound({ ...base, num_shares: numShares, reconstruction_threshold: majorityThreshold(numShares) }, vectors, { dropAt: { unmask: dropped } });
    if (run.outcome.kind !== "done") throw new Error(`aborted: ${JSON.stringify(run.outcome)}`);
    const { result } = run.outcome;
    expect(result.clients).toBe(20); // their vectors arrived, so they are in the sum
    expect([...result.droppedAt.keys()].sort()).toEqual(dropped);
    const want = plainSum(vectors, clientIds, base);
    const step = (2 * base.clipping_range) / base.quantization_range;
    for (let i = 0; i < want.length; i++) expect(Math.abs(result.sum[i]! - want[i]!)).toBeLessThanOrEqual(20 * step);
  });

  it("recovers clients dropping before their masked input, from their neighbours' key shares", async () => {
    const clientIds = ids(15);
    const vectors = randomVectors(clientIds, base.vector_length, 1);
    const beforeMasking = ["client-002", "client-009"];
    const beforeSharing = ["client-004"];
    // 8 neighbours and a threshold of 5: 4 dropped leave 5 shares of every secret.
    const run = await runRound({ ...base, num_shares: 9, reconstruction_threshold: 5 }, vectors, {
      dropAt: { "masked-input": beforeMasking, "share-keys": beforeSharing, unmask: ["client-011"] },
    });
    if (run.outcome.kind !== "done") throw new Error(`aborted: ${JSON.stringify(run.outcome)}`);
    const { result } = run.outcome;
    const included = clientIds.filter((id) => !beforeMasking.includes(id) && !beforeSharing.includes(id));
    expect(result.included).toEqual(included);
    const want = plainSum(vectors, included, base);
    const step = (2 * base.clipping_range) / base.quantization_range;
    for (let i = 0; i < want.length; i++) expect(Math.abs(result.sum[i]! - want[i]!)).toBeLessThanOrEqual(included.length * step);
  });

  it("aborts with a logged reason and no sum when fewer than the threshold survive", async () => {
    const clientIds = ids(6);
    const vectors = randomVectors(clientIds, base.vector_length, 1);
    const run = await runRound({ ...base, num_shares: 5, reconstruction_threshold: 3 }, vectors, {
      dropAt: { "masked-input": clientIds.slice(0, 4) },
    });
    expect(run.outcome.kind).toBe("aborted");
    expect(run.server.step).toBe("aborted");
    expect(run.server.aborted).toMatch(/2 clients answered masked-input, reconstruction_threshold is 3/);
    expect(run.server.events.some((e) => e.code === "FT337" && e.level === "error")).toBe(true);
    // Nothing was asked in the unmask step, so no share of anything left a client.
    expect(run.sent.some((raw) => jsonOf(raw).includes('"step":"unmask"'))).toBe(false);
  });

  it("with min_clients (--min-clients, distributed DP's minimum), aborts before unmasking a sum of fewer masked inputs", async () => {
    const clientIds = ids(8);
    const vectors = randomVectors(clientIds, base.vector_length, 1);
    // 6 masked inputs meet the threshold of 5, but not the 7 a sum must hold: the unmask step is never asked.
    const run = await runRound({ ...base, num_shares: 8, reconstruction_threshold: 5 }, vectors, { dropAt: { "masked-input": clientIds.slice(0, 2) }, minClients: 7 });
    expect(run.outcome.kind).toBe("aborted");
    expect(run.server.aborted).toMatch(/6 clients answered masked-input, fewer than the 7 a sum must hold \(min_clients\)/);
    expect(run.server.events.some((e) => e.code === "FT337" && e.level === "error")).toBe(true);
    expect(run.sent.some((raw) => jsonOf(raw).includes('"step":"unmask"'))).toBe(false);
    // One dropout fewer: 7 masked inputs, and the sum is unmasked as usual.
    const enough = await runRound({ ...base, num_shares: 8, reconstruction_threshold: 5 }, vectors, { dropAt: { "masked-input": clientIds.slice(0, 1) }, minClients: 7 });
    expect(enough.outcome.kind).toBe("done");
    // Members lost after their masked input are still in the sum: fewer than min_clients left to
    // unmask is no reason to abort (the demo's round 5: 3 of 10 killed at unmask, min_clients 8).
    const late = await runRound({ ...base, num_shares: 8, reconstruction_threshold: 5 }, vectors, { dropAt: { unmask: clientIds.slice(0, 2) }, minClients: 7 });
    if (late.outcome.kind !== "done") throw new Error(`aborted: ${JSON.stringify(late.outcome)}`);
    expect(late.outcome.result.clients).toBe(8);
    const want = plainSum(vectors, clientIds, base);
    const step = (2 * base.clipping_range) / base.quantization_range;
    for (let i = 0; i < want.length; i++) expect(Math.abs(late.outcome.result.sum[i]! - want[i]!)).toBeLessThanOrEqual(8 * step);
  });

  it("aborts when a survivor's self-mask seed cannot be rebuilt (too many of its neighbours gone)", async () => {
    const clientIds = ids(10);
    const vectors = randomVectors(clientIds, base.vector_length, 1);
    // complete graph, threshold 6: 5 of 10 answering the unmask step leaves 5 shares per seed.
    const run = await runRound({ ...base, num_shares: 10, reconstruction_threshold: 6 }, vectors, { dropAt: { unmask: clientIds.slice(0, 4) } });
    expect(run.outcome.kind).toBe("done");
    const worse = await runRound({ ...base, num_shares: 10, reconstruction_threshold: 6 }, vectors, { dropAt: { unmask: clientIds.slice(0, 5) } });
    expect(worse.outcome.kind).toBe("aborted");
    expect(worse.server.aborted).toMatch(/5 clients answered unmask, reconstruction_threshold is 6/);
  });

  it("uses a neighbour graph of degree num_shares - 1 over a permutation from the signed key list's hash", async () => {
    const clientIds = ids(30);
    const run = await runRound({ ...base, num_shares: 7, reconstruction_threshold: 4 }, randomVectors(clientIds, base.vector_length, 1));
    const sent = run.sent.map((raw) => JSON.parse(jsonOf(raw)));
    // One key list and one seed for all, the seed the list hashes to.
    const shareKeys = sent.filter((m) => m.step === "share-keys");
    expect(shareKeys).toHaveLength(30);
    expect(new Set(shareKeys.map((m) => m.graph_seed)).size).toBe(1);
    expect(shareKeys[0].graph_seed).toBe(graphSeed(run.server.session, base.round, shareKeys[0].roster));
    // Each client's shares come from its 6 neighbours, those of the graph every client derives from the seed.
    const graph = publicGraph(clientIds, 6, shareKeys[0].graph_seed);
    const maskedInput = sent.filter((m) => m.step === "masked-input");
    for (const m of maskedInput) expect(new Set(m.shares.map((s: { from: string }) => s.from))).toEqual(graph.get(m.to));
    // Not the id order's ring: some client's neighbours are not its id neighbours.
    const byOrder = maskedInput.filter((m) => {
      const i = clientIds.indexOf(m.to);
      const ring = [-3, -2, -1, 1, 2, 3].map((d) => clientIds[(i + d + 30) % 30]);
      return m.shares.every((s: { from: string }) => ring.includes(s.from));
    });
    expect(byOrder.length).toBeLessThan(30);
  });
});

describe("SecAgg+ parameters", () => {
  it("numSharesForDropouts leaves every seed a threshold of shares whatever the graph and whichever clients drop", () => {
    for (let trial = 0; trial < 300; trial++) {
      const n = 5 + Math.floor(Math.random() * 56);
      const dropouts = Math.floor(Math.random() * (n / 2));
      const shares = numSharesForDropouts(n, dropouts);
      const p = resolveSecAggParams({ ...base, num_shares: shares, reconstruction_threshold: majorityThreshold(shares) }, n);
      const clientIds = ids(n);
      const graph = ringGraph(permutation(clientIds, webCryptoRandomBytes), p.num_shares - 1);
      const dropped = new Set(permutation(clientIds, webCryptoRandomBytes).slice(0, dropouts));
      for (const u of clientIds) {
        const left = (dropped.has(u) ? 0 : 1) + [...graph.get(u)!].filter((v) => !dropped.has(v)).length;
        expect(left).toBeGreaterThanOrEqual(p.reconstruction_threshold);
      }
    }
  });

  it("resolves Flower's proportions and refuses bad values with FT335", () => {
    const p = resolveSecAggParams({ ...base, num_shares: 0.5, reconstruction_threshold: 0.6 }, 20);
    expect(p.num_shares).toBe(11);
    expect(p.reconstruction_threshold).toBe(7);
    expect(resolveSecAggParams({ ...base, num_shares: 30, reconstruction_threshold: 5 }, 8).num_shares).toBe(8);
    expect(() => resolveSecAggParams({ ...base, reconstruction_threshold: 2 }, 20)).toThrow(/FT335.*strict majority/);
    expect(() => resolveSecAggParams({ ...base, modulus_range: 3000 }, 20)).toThrow(/FT335.*power of two/);
    expect(() => resolveSecAggParams({ ...base, modulus_range: 2 ** 24 }, 20)).toThrow(/FT335.*below modulus_range/);
    expect(() => resolveSecAggParams({ ...base, clipping_range: Number.NaN }, 20)).toThrow(/FT335.*clipping_range/);
    expect(() => resolveSecAggParams({ ...base, vector_length: 0 }, 20)).toThrow(/FT335.*vector_length/);
    expect(() => resolveSecAggParams(base, 1)).toThrow(/FT335.*cohort/);
    expect([10, 20, 50, 1000].map(defaultNumShares)).toEqual([9, 11, 13, 21]);
    expect(defaultNumShares(5)).toBe(5);
  });
});
