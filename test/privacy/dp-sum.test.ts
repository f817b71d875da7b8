/**
 * dpSum, the language's DP aggregator, against hand computations: each client's whole tree is
 * clipped to global L2 norm C, the clipped trees are summed, and the SERVER adds
 * N(0, (z C)^2) per coordinate from the key; its sum node carries the aggregator's name in the
 * IR, which survives JSON, the reference interpreter and reloading; and the private flag that
 * tracing checks is in the IR too.
 */
import { describe, expect, test } from "vitest";
import { atClients, atServer, dpSum, f32, FedTensorError, i32, interpret, loadProgram, program, reduceSum } from "../../src/index.js";
import { host, read } from "../lib/helpers.js";

const inputs = { u: atClients({ a: f32([2]), b: f32([1]) }, { private: true }), clip: atServer(f32([])), key: atServer(i32([2])) };
const dp = (z: number) => program(inputs, ({ u, clip, key }) => dpSum(u, { clip, noiseMultiplier: z, key }), { name: `dp_sum_${z}` });
// Client 0's tree has norm 5 (3, 4 | 0): clipped to C = 1 it is (0.6, 0.8 | 0); client 1's (0.1, 0 | 0.2) is within C.
const cohort = { u: { a: host([2, 2], [3, 4, 0.1, 0]), b: host([2, 1], [0, 0.2]) }, clip: 1, key: [0, 5] };

describe("dpSum", () => {
  test("with negligible noise it is the sum of the clients' trees clipped to global norm C", async () => {
    // noiseMultiplier 0 is FT110 (test/privacy/release-keys.test.ts); 1e-30 vanishes in float32 next to the sum.
    const out = (await read(await dp(1e-30).run(cohort))) as unknown as { a: number[]; b: number[] };
    expect(out.a[0]).toBeCloseTo(0.7, 6);
    expect(out.a[1]).toBeCloseTo(0.8, 6);
    expect(out.b[0]).toBeCloseTo(0.2, 6);
  });

  test("adds N(0, (z C)^2) to every coordinate at the SERVER (2e5 draws), as the reference interpreter does", async () => {
    const wide = program({ u: atClients(f32([100_000]), { private: true }), key: atServer(i32([2])) }, ({ u, key }) => dpSum(u, { clip: 2, noiseMultiplier: 0.5, key }));
    const zeros = { u: host([2, 100_000], new Array(200_000).fill(0)), key: [1, 2] };
    const noise = (await read(await wide.run(zeros))) as unknown as number[];
    const mean = noise.reduce((s, v) => s + v, 0) / noise.length;
    const std = Math.sqrt(noise.reduce((s, v) => s + (v - mean) ** 2, 0) / (noise.length - 1));
    // Standard errors: mean 1 / sqrt(1e5) ~ 0.003, std 1 / sqrt(2e5) ~ 0.0022.
    expect(Math.abs(mean)).toBeLessThan(0.015);
    expect(Math.abs(std - 1)).toBeLessThan(0.012);
    const reference = interpret(dp(0.3).ir, cohort) as unknown as { a: { data: Float32Array } };
    const device = (await read(await dp(0.3).run(cohort))) as unknown as { a: number[] };
    // The draws are bit-identical; the clip's float32 arithmetic may round differently by an ulp.
    Array.from(reference.a.data).forEach((v, i) => expect(v).toBeCloseTo(device.a[i]!, 6));
  });

  test("the IR names the aggregator on its sum and marks the private values; both survive JSON", () => {
    const p = dp(1);
    const sums = p.ir.graph.nodes.filter((n) => n.op === "federated_sum");
    // Each sum records the release it belongs to: its number, its options (a constant, or the input that feeds it).
    const release = { aggregator: "dpSum", release: 0, clip: null, clipInput: 2, noiseMultiplier: 1 };
    expect(sums.map((n) => n.attrs)).toEqual([release, release]);
    expect(p.aggregators).toEqual(["dpSum"]);
    expect(p.signature).toBe("(<u={<a=f32[2],b=f32[1]>}@CLIENTS(private),clip=f32[]@SERVER,key=i32[2]@SERVER> -> <a=f32[2],b=f32[1]>@SERVER)");
    const reloaded = loadProgram(JSON.stringify(p.ir));
    expect(reloaded.signature).toBe(p.signature);
    expect(reloaded.aggregators).toEqual(["dpSum"]);
    expect(reloaded.privacy).toEqual(["dpSum #0: Gaussian mechanism, clip input clip (checked > 0 when run), noise multiplier 1, rho = 0.5 zCDP per call, called once"]);
  });

  test("FT109 names the first private leaf; FT110 and FT302 for bad options", () => {
    // From plain JavaScript (tsc rejects the same call with the same text).
    const untypedSum = reduceSum as (x: unknown) => never;
    expect(() => program(inputs, ({ u }) => untypedSum(u))).toThrow(
      "FT109: reduceSum() would release private client data, got {f32[2]}@CLIENTS(private) at a: only a DP or secure aggregator (dpSum, secureSum) may take it to the SERVER",
    );
    const loose = dpSum as (...args: unknown[]) => unknown;
    expect(() => program(inputs, ({ u, key }) => loose(u, { clip: -1, noiseMultiplier: 1, key }) as never)).toThrow("FT110: dpSum() clip must be a finite number > 0, got -1");
    expect(() => program(inputs, ({ u, key }) => loose(u, { clip: 1, noiseMultiplier: Number.NaN, key }) as never)).toThrow("FT110: dpSum() noiseMultiplier must be a finite number > 0, got NaN");
    expect(() => program(inputs, ({ u }) => loose(u, { clip: 1, noiseMultiplier: 1 }) as never)).toThrow("FT110: dpSum() key must be a random key (i32[2]) at the SERVER, got a value that is no tensor");
    expect(() => program(inputs, ({ u }) => loose(u) as never)).toThrow(FedTensorError);
    const place = atClients as (...args: unknown[]) => unknown;
    expect(() => place(f32([2]), { private: "yes" })).toThrow("FT302: atClients() option private: expected true or false, got");
    expect(() => place(f32([2]), { secret: true })).toThrow("FT302: atClients() options: expected { private: boolean }, got");
  });
});

test("`fedtensor ir --signature` prints private inputs and the aggregators each program uses", async () => {
  const { vi } = await import("vitest");
  const { irCommand } = await import("../../src/cli/ir.js");
  const lines: string[] = [];
  const log = vi.spyOn(console, "log").mockImplementation((line: string) => void lines.push(line));
  try {
    expect(await irCommand.run(["examples/federated-analytics.ts", "privateLabelHistogram", "--signature"])).toBe(0);
    expect(await irCommand.run(["examples/federated-analytics.ts", "labelStatistics", "--signature"])).toBe(0);
  } finally {
    log.mockRestore();
  }
  expect(lines).toEqual([
    "privateLabelHistogram: (<labels={i32[N]}@CLIENTS(private),mask={f32[N]}@CLIENTS(private),key=i32[2]@SERVER> -> f32[10]@SERVER)\n  federated_dp_sum: ({f32[10]}@CLIENTS(private) -> f32[10]@SERVER)\n  dpSum #0: Gaussian mechanism, clip 600, noise multiplier 1, rho = 0.5 zCDP per call, called once",
    "labelStatistics: (<pixels={f32[N,784]}@CLIENTS,labels={i32[N]}@CLIENTS,mask={f32[N]}@CLIENTS,count={f32[]}@CLIENTS> -> <brightness=f32[],histogram=f32[10]>@SERVER)\n  " +
      ["federated_sum: ({f32[]}@CLIENTS -> f32[]@SERVER)", "federated_sum: ({f32[]}@CLIENTS -> f32[]@SERVER)", "federated_sum: ({f32[10]}@CLIENTS -> f32[10]@SERVER)"].join("\n  "),
  ]);
});

test("the library's DP-FedAvg traces with private client data and aggregates only through dpSum; FedAvg's data is not private", async () => {
  const { aggregator, aggregationStages: stages, fedAvgProgram, logistic: model } = await import("../../src/lib/index.js");
  for (const bound of [1, "adaptive"] as const) {
    const dpRound = fedAvgProgram(model, { aggregator: aggregator(stages.clip(bound), stages.dp()) });
    expect(dpRound.aggregators).toEqual(["dpSum"]);
    expect(dpRound.signature).toContain("x={f32[S,B,784]}@CLIENTS(private),y={i32[S,B]}@CLIENTS(private)");
    expect(dpRound.ir.graph.nodes.filter((n) => n.op === "federated_sum").every((n) => n.attrs.aggregator === "dpSum")).toBe(true);
  }
  const plain = fedAvgProgram(model);
  expect(plain.signature).not.toContain("(private)");
  expect(plain.aggregators).toEqual(["reduceSum"]);
});

test("secureSum takes private data to the SERVER too, and the signature names it", async () => {
  const { secureSum } = await import("../../src/index.js");
  const masked = program({ u: atClients(f32([3]), { private: true }), key: atServer(i32([2])) }, ({ u, key }) =>
    secureSum(u, { bits: 20, key, range: [-1, 1], scale: 1000 }),
  );
  expect(masked.aggregators).toEqual(["secureSum"]);
  const out = (await read(await masked.run({ u: host([2, 3], [0.5, -0.25, 0, 0.25, 0.25, 1]), key: [0, 3] }))) as unknown as number[];
  [0.75, 0, 1].forEach((v, i) => expect(out[i]).toBeCloseTo(v, 3));
});
