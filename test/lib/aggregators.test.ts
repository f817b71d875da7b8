/**
 * Aggregator chains (src/lib/aggregators): chains that cannot work are FT326 with the reason;
 * a chain releases private data only through its dp or secure stage (a private round with a
 * chain that has neither is FT109 while tracing, the types bypassed); clip,dp,secure is clip,dp
 * with the sum taken by secure sums (the same round up to the sums' quantization when the
 * noise is negligible); the rotation before quantization keeps the update; the algorithms that
 * cannot take a chain are FT305 with the reason.
 */
import { describe, expect, test } from "vitest";
import { atClients, atServer, f32, i32, program } from "../../src/index.js";
import { aggregator, aggregatorOf, aggregationStages as s, fedAvg, fedAvgProgram, fedProxProgram, mimeProgram, qfflProgram, scaffoldProgram } from "../../src/lib/index.js";
import type { Stage } from "../../src/lib/aggregators/stages.js";
import { noiseDrawsPerRound } from "../../src/lib/run/privacy.js";
import { batchInputs, host, read, separableCohort, tiny } from "./helpers.js";

const data = batchInputs(separableCohort([6, 4, 5], 3));
const params = { w: host([2, 2], [0.3, -0.2, 0.1, 0.4]), b: host([2], [0.05, -0.05]) };
const secureStage = s.secure({ bits: 30, clip: 1, maxWeight: 20, maxClients: 5 });
const untyped = aggregator as unknown as (...stages: Stage[]) => unknown;

describe("chains that cannot work are FT326, with the reason", () => {
  const cases: [Stage[], string][] = [
    [[secureStage, s.median()], "aggregator secure,median: median needs each client's value, and secure aggregation shows the server only the sum of masked values"],
    [[s.clip(1), s.dp(), s.krum()], "aggregator clip,dp,krum: dp's noise is calibrated to a sum of clipped updates, not to a krum"],
    [[s.dp(), s.clip(1)], "aggregator dp,clip: noise before clipping"],
    [[s.dp()], "aggregator dp: dp needs a clip stage before it"],
    [[s.clip(1), s.dp(), s.dp()], "aggregator clip,dp,dp: two releasing noise stages"],
    [[s.clip(1), s.quantize(2), s.dp()], "aggregator clip,quantize,dp: quantize after clip changes the clipped norm dp's noise is calibrated to"],
    [[s.mean(), s.zeroing(1)], "aggregator mean,zeroing: zeroing runs at each client, so it comes before the server's mean"],
    [[secureStage, s.dp()], "dp comes before secure: clip,dp,secure"],
    [[s.clip("adaptive")], "adaptive clipping estimates its quantile with dp's noise"],
    [[s.quantize(0)], "quantize's bits per coordinate must be a whole number from 1 to 16, got 0"],
    [[], "an aggregator needs at least one stage"],
  ];
  for (const [stages, message] of cases) test(message, () => expect(() => untyped(...stages)).toThrow(`FT326: ${message.startsWith("aggregator") ? message : ""}`));
  test("the messages are FT326's", () => expect(() => untyped(s.dp())).toThrow(/^FT326: aggregator dp: /));
});

describe("the privacy refinement", () => {
  const specs = (isPrivate: boolean) => ({
    x: atClients(f32(["S", "B", 2]), { private: isPrivate }),
    y: atClients(i32(["S", "B"]), { private: isPrivate }),
    mask: atClients(f32(["S", "B"]), { private: isPrivate }),
    count: atClients(f32([]), { private: isPrivate }),
  });
  test("a chain without dp or secure on private data is FT109 while tracing (the types bypassed)", () => {
    for (const chain of [aggregator(s.median()), aggregator(s.clip(1), s.mean()), aggregator(s.quantize(4), s.zeroing(1))]) {
      const inputs = { params: atServer(tiny.params), ...specs(true), lr: f32([]), key: atServer(i32([2])), round: i32([]) };
      const round = fedAvg(tiny, { aggregator: chain as never }) as unknown as (...args: unknown[]) => unknown;
      expect(() => program(inputs, ({ params: p, x, y, mask, count, ...rest }) => round(p, { x, y, mask, count }, rest) as never), chain.name).toThrow(/FT109/);
    }
  });

  test("a releasing chain's program declares its data private and releases through its stages only, without a loss", () => {
    const round = fedProxProgram(tiny, { aggregator: aggregator(s.clip(1), s.dp(), secureStage) }) as unknown as { aggregators: string[]; ir: { inputs: unknown }; signature: string };
    expect(round.aggregators).toEqual(["secureSum"]);
    expect(round.signature).toContain("x={f32[S,B,2]}@CLIENTS(private)");
    expect(round.signature).not.toContain("loss=");
  });
});

describe("compositions compute what they say", () => {
  const hypers = { lr: 0.5, mu: 0, clip: 0.05, noiseMultiplier: 1e-30, expectedClients: 3, key: [3, 9], round: 4 };
  test("clip,dp,secure is clip,dp with secure sums (negligible noise: equal up to the sums' quantization)", async () => {
    const dpOnly = await read(await (fedProxProgram(tiny, { aggregator: aggregator(s.clip(1), s.dp()) }) as never as { run(i: object): Promise<unknown> }).run({ params, ...data, ...hypers }));
    const dpSecure = await read(await (fedProxProgram(tiny, { aggregator: aggregator(s.clip(1), s.dp(), secureStage) }) as never as { run(i: object): Promise<unknown> }).run({ params, ...data, ...hypers }));
    const flat = (tree: unknown) => JSON.stringify(tree).match(/-?[\d.e-]+/g)!.map(Number);
    const [a, b] = [flat((dpOnly as { params: unknown }).params), flat((dpSecure as { params: unknown }).params)];
    // 30-bit sums of values in [-1, 1] over 5 clients: steps of about 1e-8; the updates are clipped to 0.05.
    a.forEach((v, i) => expect(Math.abs(v - b[i]!)).toBeLessThan(1e-6));
    expect(a.some((v, i) => v !== [0.3, -0.2, 0.1, 0.4, 0.05, -0.05][i])).toBe(true);
  });

  test("quantization at 8 bits after the Hadamard rotation stays close to the plain mean", async () => {
    const run = async (chain: Stage[]) => {
      const p = fedAvgProgram(tiny, { aggregator: aggregatorOf(chain) }) as never as { run(i: object): Promise<unknown> };
      const keyed = chain.some((stage) => stage.kind === "quantize") ? { key: [1, 2], round: 1 } : {};
      const out = (await read(await p.run({ params, ...data, lr: 0.5, ...keyed }))) as { params: { w: number[][] } };
      return out.params.w.flat();
    };
    const plain = await run([{ kind: "mean" }]);
    const rotated8 = await run([{ kind: "quantize", bits: 8, rotation: true }]);
    const step = plain.map((v, i) => v - [0.3, -0.2, 0.1, 0.4][i]!);
    rotated8.forEach((v, i) => expect(Math.abs(v - plain[i]!)).toBeLessThan(0.05 * Math.max(...step.map(Math.abs))));
  });
});

describe("algorithms that cannot take a chain say why (FT305)", () => {
  test.each([
    [() => scaffoldProgram(tiny, { aggregator: aggregator(s.median()) }), /FT305: aggregator: scaffold cannot take the aggregator median: SCAFFOLD's control variates/],
    [() => qfflProgram(tiny, { aggregator: aggregator(secureStage) }), /FT305: aggregator: qffl cannot take the aggregator secure: q-FFL weighs each client's step/],
    [() => mimeProgram(tiny, "mime", { aggregator: aggregator(s.clip(1), s.dp()) }), /FT305: aggregator: mime cannot take the aggregator clip,dp: Mime aggregates the full-batch gradients/],
  ])("%#", (make, message) => expect(make).toThrow(message));

  test("MimeLite under dp releases its delta and gradient as one clipped tree: twice the parameters' noise draws", () => {
    const base = { aggregator: "clip,dp", clients: 100, clientsPerRound: 10, dropout: 0, dpClip: 1 as const };
    expect(noiseDrawsPerRound({ ...base, algorithm: "mimelite" }, 6)).toBe(12);
    expect(noiseDrawsPerRound({ ...base, algorithm: "fedprox" }, 6)).toBe(6);
    expect(mimeProgram(tiny, "mimelite", { aggregator: aggregator(s.clip(1), s.dp()) }).aggregators).toEqual(["dpSum"]);
  });
});
