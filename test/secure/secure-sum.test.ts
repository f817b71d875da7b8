/**
 * secureSum: the masked modular sum is exact and the same on every backend, a single masked
 * input looks uniform on [0, 2^bits), and bad ranges, overflows and misuses have their FT codes.
 */
import { describe, expect, test } from "vitest";
import type * as FedTensor from "../../src/index.js";
import { add, atClients, atServer, broadcast, f32, FedTensorError, foldIn, fori, grad, i32, jvp, loadProgram, map, mul, program, reduceSum, secureSum, split, sum, type Tensor } from "../../src/index.js";
import { primitives } from "../../src/ir/primitives.js";
import { maskedValues, ringLabels, type SecureSumAttrs } from "../../src/ir/secure-sum.js";
import { randomBits, threefry2x32 } from "../../src/ir/threefry.js";
import { ModelScope, OnnxGraph, valueInfo } from "../../src/lower/onnx/graph.js";
import { modelBytes, onnxRules } from "../../src/lower/onnx/model.js";
import { maskedValueNodes } from "../../src/lower/onnx/secure.js";
import { onnxRuntime } from "../../src/lower/onnx/session.js";
import { tfjsRules } from "../../src/lower/tfjs-rules.js";
import { batchRules } from "../../src/transform/batch-rules.js";
import { jvpRules } from "../../src/transform/jvp-rules.js";
import { vjpRules } from "../../src/transform/vjp-rules.js";
import { mapReduceForm } from "../../src/transform/mapreduce.js";
import { webgpu } from "../helpers/test-backends.js";
import { BACKENDS, runOn } from "../random/helpers.js";

const everywhere = [...BACKENDS, ...(webgpu.available ? (["webgpu"] as const) : [])] as const;

/** A deterministic stream of floats in [0, 1) (a 32-bit LCG), so the cases are reproducible. */
function stream(seed: number): () => number {
  let s = seed >>> 0;
  return () => ((s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32);
}

async function ftMessage(run: () => unknown): Promise<string> {
  try {
    await run();
  } catch (error) {
    expect(error).toBeInstanceOf(FedTensorError);
    return (error as Error).message;
  }
  throw new Error("expected an FT error");
}

test("secure_sum has typing, batching, jvp and vjp rules; its batched form both lowerings", () => {
  expect(primitives.secure_sum).toBeDefined();
  for (const [table, rules] of Object.entries({ batchRules, jvpRules, vjpRules })) expect(rules.secure_sum, table).toBeDefined();
  expect(tfjsRules.secure_sum_clients).toBeDefined();
  expect(onnxRules.secure_sum_clients).toBeDefined();
});

describe("the sum", () => {
  const clients = 9;
  const scale = 1000;
  const p = program({ key: atServer(i32([2])), x: atClients(f32([2, 5])), n: atClients(i32([7])) }, ({ key, x, n }) => {
    const [floatKey, intKey, ringKey] = split(key, 3);
    return {
      floats: secureSum(x, { bits: 20, key: floatKey, range: [-10, 10], scale }),
      ints: secureSum(n, { bits: 24, key: intKey, range: [-1000, 1000] }),
      ring: secureSum(n, { bits: 24, key: ringKey, range: [-1000, 1000], neighbours: 2 }),
      plain: reduceSum(n),
    };
  });
  const next = stream(7);
  const x = Array.from({ length: clients }, () => Array.from({ length: 2 }, () => Array.from({ length: 5 }, () => Math.fround(20 * next() - 10))));
  const n = Array.from({ length: clients }, () => Array.from({ length: 7 }, () => Math.floor(2001 * next()) - 1000));
  const inputs = { key: [5, 77], x, n };

  test("integers: the plain sum, exactly, whatever the mask graph", async () => {
    const out = await runOn("reference", p, inputs);
    expect(out.ints).toEqual(out.plain);
    expect(out.ring).toEqual(out.plain);
  });

  test("floats: within n / (2 scale) of the true sum", async () => {
    const out = await runOn("reference", p, inputs);
    const truth = x.reduce((acc, c) => acc.map((v, i) => v + c.flat()[i]!), new Array<number>(10).fill(0));
    // float32 dequantization adds at most a few float32 ulps of the result.
    out.floats!.forEach((v, i) => expect(Math.abs(v - truth[i]!)).toBeLessThanOrEqual(clients / (2 * scale) + 1e-5));
  });

  test("bit-identical on every backend", async () => {
    const reference = await runOn("reference", p, inputs);
    for (const where of everywhere) expect(await runOn(where as never, p, inputs), where).toEqual(reference);
  });

  test("an all-equal value (a broadcast) sums like reduceSum; one client is FT112 (its sum is its value), on every backend", async () => {
    const q = program({ key: atServer(i32([2])), v: atServer(i32([3])), n: atClients(i32([3])) }, ({ key, v, n }) => {
      const [own, shared] = split(key);
      return { own: secureSum(n, { bits: 12, key: own, range: [0, 100] }), shared: secureSum(broadcast(v), { bits: 12, key: shared, range: [0, 100] }) };
    });
    const three = program({ key: atServer(i32([2])), n: atClients(i32([3])) }, ({ key, n }) => secureSum(n, { bits: 12, key, range: [0, 100], minClients: 3 }));
    for (const where of ["reference", ...everywhere] as const) {
      expect(await runOn(where as never, q, { key: [1, 2], v: [1, 2, 3], n: [[4, 5, 6], [0, 1, 2]] }), where).toEqual({ own: [4, 6, 8], shared: [2, 4, 6] });
      const single = "FT112: secureSum() needs at least 2 clients, got 1: a secure sum of fewer clients reveals too much of each one's value (minClients)";
      expect(await ftMessage(() => runOn(where as never, q, { key: [1, 2], v: [1, 2, 3], n: [[4, 5, 6]] })), where).toBe(single);
      expect(await ftMessage(() => runOn(where as never, three, { key: [1, 2], n: [[4, 5, 6], [0, 1, 2]] })), where).toMatch(/^FT112: secureSum\(\) needs at least 3 clients, got 2/);
    }
  });
});

describe("programs with a secure sum", () => {
  test("reload from their JSON IR, which names the primitive secure_sum with its attributes", async () => {
    const p = program({ key: atServer(i32([2])), n: atClients(i32([2])) }, ({ key, n }) => ({ s: secureSum(n, { bits: 16, key, range: [0, 9], neighbours: 2 }) }));
    const node = p.ir.graph.nodes.find((n) => n.op === "secure_sum");
    expect(node?.attrs).toEqual({ bits: 16, neighbours: 2, low: 0, high: 9, scale: 1, minClients: 2, release: 0 });
    const reloaded = loadProgram(JSON.stringify(p));
    const inputs = { key: [3, 1], n: [[1, 2], [3, 4], [5, 6]] };
    expect(await runOn("onnx", reloaded as never, inputs)).toEqual({ s: [9, 12] });
  });

  // Workers run the compiled worker script, so this test uses the compiled library in dist/
  // (npm test builds it first), as test/random/clients.test.ts does.
  test("run the same when worker threads share the clients of a per-client loop", async () => {
    const ft = (await import(`${"../../dist/src"}/index.js`)) as typeof FedTensor;
    // A matmul of per-client values makes onnx on the CPU run map() as a client loop the workers split.
    const p = ft.program({ key: ft.atServer(ft.i32([2])), x: ft.atClients(ft.f32([3])) }, ({ key, x }) =>
      ft.secureSum(ft.map((xm) => ft.matmul(ft.reshape(xm, [3, 1]), ft.reshape(xm, [1, 3])), x), { bits: 24, key, range: [0, 100], scale: 1000 }),
    );
    const inputs = { key: [1, 2], x: Array.from({ length: 8 }, (_, c) => [1, c, 2]) };
    const sums = [];
    for (const options of [{ backend: "onnx", workers: 0 }, { backend: "onnx", workers: 2 }, { backend: "wasm", workers: 2 }] as const) {
      const out = await p.run(inputs, options);
      sums.push(Array.from(await out.data()));
      out.dispose();
    }
    // sum over c of [1, c, 2]^T [1, c, 2]: c sums to 28 and c^2 to 140 over the 8 clients.
    const expected = [8, 28, 16, 28, 140, 56, 16, 56, 32];
    for (const got of sums) expect(got).toEqual(expected);
  });
});

describe("what the server sees", () => {
  const bits = 16;
  const attrs = (neighbours: number | null): SecureSumAttrs => ({ bits, neighbours, low: 0, high: 100, scale: 1 });
  const clients = 6;
  const size = 40_000;
  // Every client holds the same constant: unmasked, the server would see it everywhere.
  const quantized = new Float64Array(clients * size).fill(42);

  for (const neighbours of [null, 2]) {
    test(`a single masked input is uniform on [0, 2^${bits}) (${neighbours === null ? "all pairs" : `${neighbours} neighbours`})`, () => {
      const masked = maskedValues(quantized, clients, size, [11, 12], attrs(neighbours));
      const first = masked.subarray(0, size);
      // Chi-square over 64 equal bins: 63 degrees of freedom, 0.1% critical value 103.4.
      const bins = new Array<number>(64).fill(0);
      first.forEach((v) => bins[v >>> (bits - 6)]!++);
      const expected = size / 64;
      expect(bins.reduce((s, c) => s + (c - expected) ** 2 / expected, 0)).toBeLessThan(103.4);
      // Kolmogorov-Smirnov against the uniform distribution: D < 1.95 / sqrt(n) at the 0.1% level.
      const sorted = Float64Array.from(first, (v) => v / 2 ** bits).sort();
      const d = sorted.reduce((m, v, i) => Math.max(m, Math.abs((i + 1) / size - v), Math.abs(v - i / size)), 0);
      expect(d).toBeLessThan(1.95 / Math.sqrt(size));
      // The masks still cancel: the column sums are clients x 42 mod 2^bits.
      for (let j = 0; j < 100; j++) {
        let s = 0;
        for (let i = 0; i < clients; i++) s += masked[i * size + j]!;
        expect(s % 2 ** bits).toBe(clients * 42);
      }
    });
  }

  test("the onnx lowering's masked values are the definition's, bit for bit", async () => {
    const ort = await onnxRuntime();
    const [n, m] = [7, 33];
    const q = Array.from({ length: n * m }, (_, i) => (i * 7919) % 1000);
    for (const neighbours of [null, 2, 4]) {
      const g = new OnnxGraph(new ModelScope());
      const masked = maskedValueNodes(g, "q", "key", n, m, { bits, neighbours });
      const graph = g.finish("masks", [valueInfo("q", "int64", [n, m]), valueInfo("key", "int32", [2])], [{ name: masked, type: "int64", shape: [n, m] }]);
      graph.initializer = g.model.initializers;
      const session = await ort.InferenceSession.create(modelBytes(graph));
      const feeds = { q: new ort.Tensor("int64", BigInt64Array.from(q, BigInt), [n, m]), key: new ort.Tensor("int32", Int32Array.of(-5, 123456789), [2]) };
      const out = (await session.run(feeds))[graph.output[0]!.name]!.data as BigInt64Array;
      expect(Array.from(out, Number), String(neighbours)).toEqual(Array.from(maskedValues(q, n, m, [-5, 123456789], attrs(neighbours))));
      await session.release();
    }
  });

  test("with k neighbours a client's mask involves only its k neighbours on a secretly relabelled ring", () => {
    // k = 2: client i at label L_i adds the words of the pair key k(L_i, 1) and subtracts those of k(L_i - 1, 1).
    const key = [1, 1] as const;
    const ring = maskedValues(new Float64Array(clients * 4), clients, 4, key, attrs(2));
    const labels = ringLabels(key, clients);
    const words = (label: number) => {
      const [c0, c1] = threefry2x32(key[0], key[1], label, 1);
      return Array.from(randomBits(Int32Array.from(threefry2x32(c0, c1, 1, 1)), 4), (w) => w & (2 ** bits - 1));
    };
    for (let i = 0; i < clients; i++) {
      const [own, before] = [words(labels[i]!), words((labels[i]! + clients - 1) % clients)];
      expect(Array.from(ring.subarray(4 * i, 4 * i + 4)), `client ${i}`).toEqual(own.map((w, j) => (w - before[j]! + 2 ** bits) % 2 ** bits));
    }
    const all = maskedValues(new Float64Array(clients * 4), clients, 4, key, attrs(null));
    expect(Array.from(all.subarray(4, 8))).not.toEqual(Array.from(ring.subarray(4, 8)));
  });

  test("the ring's labels are a secret uniform permutation, not the cohort's order: who neighbours whom depends on the key", () => {
    const n = 6;
    const counts = Array.from({ length: n }, () => new Array<number>(n).fill(0));
    const keys = 3000;
    let identity = 0;
    for (let k = 0; k < keys; k++) {
      const labels = Array.from(ringLabels([k, 0x5bd1e995], n));
      expect([...labels].sort()).toEqual([0, 1, 2, 3, 4, 5]);
      if (labels.every((l, i) => l === i)) identity++;
      labels.forEach((l, i) => counts[i]![l]!++);
    }
    // Each client's label is uniform: chi-square over 6 labels (5 degrees of freedom; 20.5 is p = 0.001), per client.
    for (const row of counts) expect(row.reduce((chi, c) => chi + (c - keys / n) ** 2 / (keys / n), 0)).toBeLessThan(20.5);
    // The identity (the sorted order) comes up about keys / 720 times, as any other permutation.
    expect(identity).toBeLessThan(15);
  });
});

describe("errors", () => {
  const p = program({ key: atServer(i32([2])), x: atClients(f32([3])) }, ({ key, x }) => secureSum(x, { bits: 20, key, range: [-1, 1], scale: 100 }));

  test("FT309: values outside the declared range (and NaN) fail the run on every backend", async () => {
    for (const bad of [[0, 1.5, 0], [0, Number.NaN, -3]]) {
      const inputs = { key: [1, 2], x: [[0, 0, 0], bad] };
      const count = bad.filter((v) => !(v >= -1 && v <= 1)).length;
      const text = `FT309: secureSum(): ${count} client values lie outside the declared range [-1, 1] (or are NaN)`;
      expect(await ftMessage(() => runOn("reference", p, inputs))).toBe(text);
      for (const where of everywhere) expect(await ftMessage(() => runOn(where as never, p, inputs)), where).toBe(text);
    }
  });

  test("FT311: overflow at trace time when maxClients is given, at run time otherwise", async () => {
    const overflow = "FT311: secureSum(): 11 clients with quantized values up to 200 do not sum exactly in 2^11; at most 10 clients fit";
    expect(await ftMessage(() => program({ key: atServer(i32([2])), x: atClients(f32([3])) }, ({ key, x }) => secureSum(x, { bits: 11, key, range: [-1, 1], scale: 100, maxClients: 11 })))).toBe(overflow);
    const q = program({ key: atServer(i32([2])), x: atClients(f32([3])) }, ({ key, x }) => ({ s: secureSum(x, { bits: 11, key, range: [-1, 1], scale: 100 }) }));
    const inputs = { key: [1, 2], x: Array.from({ length: 11 }, () => [0, 0, 0]) };
    for (const where of ["reference", ...everywhere] as const) expect(await ftMessage(() => runOn(where as never, q, inputs)), where).toBe(overflow);
    expect(await runOn("onnx", q, { ...inputs, x: inputs.x.slice(1) })).toEqual({ s: [0, 0, 0] });
  });

  test("FT312: bad options", async () => {
    const build = (options: object) => () => program({ key: atServer(i32([2])), x: atClients(f32([3])) }, ({ key, x }) => secureSum(x, { key, ...options } as never));
    expect(await ftMessage(build({ bits: 31, range: [0, 1], scale: 1 }))).toBe("FT312: secureSum bits: expected a whole number in [1, 30], got 31");
    expect(await ftMessage(build({ bits: 20, range: [1, 0], scale: 1 }))).toMatch(/^FT312: secureSum range:/);
    expect(await ftMessage(build({ bits: 20, range: [0, 1] }))).toMatch(/^FT312: secureSum scale: float32 values need/);
    expect(await ftMessage(build({ bits: 20, range: [0, 1], scale: 1, neighbours: 3 }))).toMatch(/^FT312: secureSum neighbours:/);
    const clientKey = () => program({ key: atClients(i32([2])), x: atClients(f32([3])) }, ({ key, x }) => secureSum(x, { bits: 20, key: key as never, range: [0, 1], scale: 1 }));
    expect(await ftMessage(clientKey)).toMatch(/^FT312: secureSum key: the pair keys derive from one key that the server holds/);
  });

  test("FT103 for a SERVER value, FT105 inside map()", async () => {
    const server = () => program({ key: atServer(i32([2])), v: atServer(f32([3])) }, ({ key, v }) => secureSum(v as never, { bits: 20, key, range: [0, 1], scale: 1 }));
    expect(await ftMessage(server)).toBe("FT103: secureSum() takes CLIENTS values, got f32[3]@SERVER");
    const inside = () =>
      program({ key: atServer(i32([2])), x: atClients(f32([3])) }, ({ key, x }) => map((xm) => secureSum(xm as never, { bits: 20, key, range: [0, 1], scale: 1 }), x));
    expect(await ftMessage(inside)).toMatch(/^FT105: secureSum\(\)/);
  });

  test("a MapReduce form sums group by group (one SecAgg+ group a chunk); in a loop body it is FT315", async () => {
    const q = program({ key: atServer(i32([2])), x: atClients(f32([3])) }, ({ key, x }) => secureSum(x, { bits: 20, key, range: [0, 1], scale: 1 }));
    const form = mapReduceForm(q.ir);
    expect(form.groupKeyInputs).toEqual(["groupKey0"]);
    expect(form.parts.accumulate.ir.graph.nodes.find((n) => n.op === "secure_sum")?.attrs).toMatchObject({ grouped: true, neighbours: null });
    // Inside a loop body too: FT315 for the loop, not a misleading FT314 about its outputs.
    const looped = program({ key: atServer(i32([2])), w: atServer(f32([3])), x: atClients(f32([3])) }, ({ key, w, x }) =>
      fori(2, w, (i, v) => add(v, secureSum(x, { bits: 20, key: foldIn(key, i), range: [0, 1], scale: 1 }))),
    );
    expect(await ftMessage(() => mapReduceForm(looped.ir))).toMatch(/^FT315: scan: its body broadcasts or aggregates/);
  });
});

describe("derivatives treat it as a sum, straight through the quantization", () => {
  const p = program({ key: atServer(i32([2])), w: atServer(f32([3])), t: atServer(f32([3])), x: atClients(f32([3])) }, ({ key, w, t, x }) => {
    // The data is not private here: derivatives of a secure sum of private data are FT109 (test/privacy/derivatives.test.ts).
    const [gradKey, jvpKey] = split(key);
    const secure = (k: typeof key) => (v: Tensor<[3], "float32", "server">) => sum(secureSum(map((vm, xm) => mul(vm, xm), broadcast(v), x), { bits: 24, key: k, range: [-100, 100], scale: 1000 }));
    const plain = (v: Tensor<[3], "float32", "server">) => sum(reduceSum(map((vm, xm) => mul(vm, xm), broadcast(v), x)));
    return { secureGrad: grad(secure(gradKey))(w), plainGrad: grad(plain)(w), secureTangent: jvp(secure(jvpKey), [w], [t])[1], plainTangent: jvp(plain, [w], [t])[1] };
  });

  test("grad and jvp equal those of reduceSum, on every backend", async () => {
    const inputs = { key: [1, 2], w: [1, 2, 3], t: [1, -1, 0.5], x: [[1, 2, 3], [4, 5, 6], [-1, 0, 1]] };
    for (const where of ["reference", ...everywhere] as const) {
      const out = await runOn(where as never, p, inputs);
      expect(out.secureGrad, where).toEqual(out.plainGrad);
      expect(out.secureTangent, where).toEqual(out.plainTangent);
    }
  });
});
