/**
 * Your own data (issue 24): ragged per-client arrays packed and checked by clientsFrom, padded
 * and batched cohorts with masks and counts, the bridge to FederatedDataset, and a FedAvg round
 * on such data whose average follows the clients' example counts.
 */
import { describe, expect, test } from "vitest";
import { batchClients, clientCounts, clientsFrom, federateClients, padClients } from "../../src/lib/data/clients.js";
import { batchCohort } from "../../src/lib/data/federated.js";
import { fedAvgProgram } from "../../src/lib/algorithms/fedavg.js";
import { Rng } from "../../src/lib/random.js";
import { host, read, tiny } from "../lib/helpers.js";
import { expectFtError } from "./helpers.js";

/** Three clients of 5, 2 and 9 examples: two features, a label. */
function raggedClients(seed = 3) {
  const rng = Rng.fromSeed(seed);
  return [5, 2, 9].map((n, c) => {
    const x = Array.from({ length: n }, () => [rng.normal(c - 1, 1), rng.normal(1 - c, 1)]);
    return { x, y: x.map(([a, b]) => (a! + b! > 0 ? 1 : 0)) };
  });
}

describe("clientsFrom", () => {
  test("packs ragged clients client after client, with offsets and counts", () => {
    const data = clientsFrom(
      [
        { x: [[1, 2], [3, 4]], y: Int32Array.of(0, 1) },
        { x: { shape: [1, 2], data: [5, 6] }, y: Int32Array.of(1) },
      ],
      { ids: ["alice", "bob"] },
    );
    expect(data.clientIds).toEqual(["alice", "bob"]);
    expect(Array.from(data.offsets)).toEqual([0, 2, 3]);
    expect(data.fields.x).toEqual({ dtype: "float32", shape: [2], data: Float32Array.of(1, 2, 3, 4, 5, 6) });
    expect(data.fields.y).toEqual({ dtype: "int32", shape: [], data: Int32Array.of(0, 1, 1) });
    expect(Array.from(clientCounts(data))).toEqual([2, 1]);
  });

  test("a Map names its clients; dtypes declares int32 labels given as numbers", () => {
    const data = clientsFrom(new Map([["u7", { y: [2, 0] }], ["u9", { y: [1] }]]), { dtypes: { y: "int32" } });
    expect(data.clientIds).toEqual(["u7", "u9"]);
    expect(data.fields.y.data).toEqual(Int32Array.of(2, 0, 1));
  });

  test("bad data is FT302 naming the client, field and example", () => {
    expectFtError(() => clientsFrom([{ x: [[1, 2]] }, { x: [] }]), "FT302", "client client-001", "has no examples");
    expectFtError(() => clientsFrom([{ x: [[1, 2], [3]] }]), "FT302", "client client-000, field x, example 1", "is ragged: expected shape [2]");
    expectFtError(() => clientsFrom([{ x: [[1, 2]] }, { x: [[1, 2, 3]] }]), "FT302", "client client-001, field x", "shape [3], client client-000's [2]");
    expectFtError(() => clientsFrom([{ x: [[1, Number.NaN]] }]), "FT302", "client client-000, field x, example 0", "value NaN is not a finite float32");
    expectFtError(() => clientsFrom([{ x: [[1e39]] }]), "FT302", "value 1e+39 is not a finite float32");
    expectFtError(() => clientsFrom([{ y: [1.5] }], { dtypes: { y: "int32" } }), "FT302", "value 1.5 is not an int32 whole number");
    expectFtError(() => clientsFrom([{ x: [[1]], y: [1, 0] }]), "FT302", "client client-000", "field y has 2 examples, field x has 1");
    expectFtError(() => clientsFrom([{ x: [[1]] }, { z: [[1]] }]), "FT302", "client client-001", "has fields z where client client-000 has x");
    expectFtError(() => clientsFrom([{ x: [[1]], mask: [1] }]), "FT302", "field mask");
    expectFtError(() => clientsFrom([]), "FT302", "no clients");
    expectFtError(() => clientsFrom([{ x: [[1]] }], { ids: ["a", "b"] }), "FT302", "2 ids for 1 clients");
    expectFtError(() => clientsFrom([{ x: [[1]] }, { x: [[2]] }], { ids: ["a", "a"] }), "FT302", "ids must be unique");
    expectFtError(() => clientsFrom(new Map<unknown, { x: number[][] }>([[1, { x: [[1]] }], ["1", { x: [[2]] }]]) as never), "FT302", "ids must be unique");
    expectFtError(() => clientsFrom([{ x: "abc" as never }]), "FT302", "expected an array with one entry per example");
  });
});

describe("cohort tensors", () => {
  const data = clientsFrom(raggedClients(), { dtypes: { y: "int32" } });

  test("padClients: each client's examples in order, padded to the largest, mask and count", () => {
    const cohort = padClients(data, [1, 0]);
    expect(cohort.x.shape).toEqual([2, 5, 2]);
    expect(cohort.y.shape).toEqual([2, 5]);
    expect(Array.from(cohort.mask.data)).toEqual([1, 1, 0, 0, 0, 1, 1, 1, 1, 1]);
    expect(Array.from(cohort.count.data)).toEqual([2, 5]);
    expect(Array.from(cohort.x.data.subarray(0, 4))).toEqual(Array.from(data.fields.x.data.subarray(10, 14)));
    expect(Array.from(cohort.x.data.subarray(4, 10))).toEqual([0, 0, 0, 0, 0, 0]);
    expect(cohort.y.data).toBeInstanceOf(Int32Array);
  });

  test("batchClients: the same examples and order as batchCohort on federateClients(data)", () => {
    const options = { batchSize: 3, epochs: 2, rng: Rng.fromSeed(7) };
    const mine = batchClients(data, [2, 0, 1], options);
    const theirs = batchCohort(federateClients(data), [2, 0, 1], options);
    expect(mine.x).toEqual(theirs.x);
    expect(mine.y).toEqual(theirs.y);
    expect(mine.mask).toEqual(theirs.mask);
    expect(mine.count).toEqual(theirs.count);
    // ceil(2 epochs * 9 examples / 3) batches; every example of a client appears `epochs` times.
    expect(mine.x.shape).toEqual([3, 6, 3, 2]);
    expect(Array.from(mine.mask.data).reduce((a, b) => a + b, 0)).toBe(2 * (9 + 5 + 2));
  });

  test("an empty cohort and a position outside the clients are errors", () => {
    expectFtError(() => padClients(data, []), "FT302", "cohort", "no clients");
    expectFtError(() => batchClients(data, [3], { batchSize: 2, rng: Rng.fromSeed(0) }), "FT305", "client position 3 is not in [0, 3)");
  });

  test("federateClients: labels must be int32 scalars; numClasses defaults to the largest label + 1", () => {
    const federated = federateClients(data, { test: { x: [[0, 1]], y: [1] } });
    expect(federated.train.numClasses).toBe(2);
    expect(federated.clientIds).toEqual(data.clientIds);
    expect(federated.clientIndices.map((indices) => indices.length)).toEqual([5, 2, 9]);
    expect(federated.test.y).toEqual(Int32Array.of(1));
    expectFtError(() => federateClients(clientsFrom(raggedClients())), "FT302", "field y", "labels are one int32 per example; got float32");
    expectFtError(() => federateClients(data, { labels: "z" as never }), "FT302", "no field z");
  });
});

describe("a FedAvg round on your own ragged data", () => {
  test("runs, and averages the clients' models weighted by their example counts", async () => {
    const data = clientsFrom(raggedClients(), { dtypes: { y: "int32" } });
    const params = { w: host([2, 2], [0.3, -0.2, 0.1, 0.4]), b: host([2], [0.05, -0.05]) };
    const program = fedAvgProgram(tiny);
    const options = { batchSize: 2, rng: Rng.fromSeed(11) };
    const round = async (clients: number[]) => {
      const { x, y, mask, count } = batchClients(data, clients, options);
      return read(await program.run({ params, x, y, mask, count, lr: 0.5 }, { backend: "wasm" }));
    };
    const together = await round([0, 1, 2]);
    // Each client alone: its batches are the same (its own fork of the rng), only less padded.
    const alone = await Promise.all([0, 1, 2].map((c) => round([c])));
    const counts = [5, 2, 9];
    const weighted = (pick: (p: (typeof alone)[number]["params"]) => number[]) =>
      pick(alone[0]!.params).map((_, i) => alone.reduce((sum, one, c) => sum + counts[c]! * pick(one.params)[i]!, 0) / 16);
    const flat = (p: (typeof alone)[number]["params"]) => [...(p.w as number[][]).flat(), ...(p.b as number[])];
    weighted(flat).forEach((value, i) => expect(flat(together.params)[i]).toBeCloseTo(value, 5));
    // An unweighted mean of the clients' models is a different model: the weights matter here.
    const unweighted = flat(alone[0]!.params).map((_, i) => alone.reduce((sum, one) => sum + flat(one.params)[i]!, 0) / 3);
    expect(Math.max(...unweighted.map((v, i) => Math.abs(v - flat(together.params)[i]!)))).toBeGreaterThan(1e-3);
  });
});
