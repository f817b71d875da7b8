/**
 * Aggregator chains (src/lib/aggregators): chains that cannot work are FT326 with the reason;
 * a chain releases private data only through its dp or secure stage (a private round with a
 * chain that has neither is FT109 while tracing, the types bypassed); clip,dp,secure is clip,dp
 * with the sum taken by secure sums (the same round up to the sums' quantization when the
 * noise is negligible); the rotation before quantization keeps the update; distributed-dp is
 * the clients' mean weighed alike, after the attack and zeroing stages before it; the
 * algorithms that cannot take a chain are FT305 with the reason.
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
const ddpStage = s.distributedDp({ clip: 5, noiseMultiplier: 1e-4, bits: 20, minClients: 3, maxClients: 3 });
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
    [[ddpStage, secureStage], "aggregator distributed-dp,secure: distributed-dp is itself the secure sum and its noise, so no secure stage goes with it"],
    [[s.clip(1), s.dp(), ddpStage], "aggregator clip,dp,distributed-dp: distributed-dp is itself the secure sum and its noise, so no dp stage goes with it"],
    [[ddpStage, s.mean()], "aggregator distributed-dp,mean: distributed-dp divides its sum by the number of clients that took part, so no mean stage goes with it"],
    [[s.zeroing(1), ddpStage, s.krum()], "aggregator zeroing,distributed-dp,krum: krum needs each client's value, and distributed-dp shows the server only the noised sum"],
    [[s.clip(1), ddpStage], "aggregator clip,distributed-dp: distributed-dp clips each client's whole update to its own bound (--ddp-clip), so no clip stage goes before it"],
    [[s.quantize(4), ddpStage], "aggregator quantize,distributed-dp: distributed-dp rotates and rounds each update itself, to its modulus 2^bits, so no quantize stage goes before it"],
    [[ddpStage, s.zeroing(1)], "aggregator distributed-dp,zeroing: zeroing runs at each client, so it comes before the server's distributed-dp"],
    [[s.distributedDp({ clip: 1, noiseMultiplier: 1, bits: 16, minClients: 4, maxClients: 3 })], "distributed-dp's minClients and maxClients must be whole numbers, 1 <= minClients <= maxClients <= 65535, got 4 and 3"],
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

describe("distributed-dp: each client's update through the stages before it, then the distributed sum over the clients", () => {
  // Three clients weighed alike: the plain mean of the same round with equal counts.
  const alike = { ...data, count: host([3], [1, 1, 1]) };
  const keys = { key: [3, 9], round: 4, clientKeys: host([3, 2], [1, 2, 3, 4, 5, 6]) };
  const run = async (chain: Stage[], inputs: object) => {
    const round = fedAvgProgram(tiny, { aggregator: aggregatorOf(chain) }) as never as { run(i: object): Promise<unknown> };
    return (JSON.stringify(((await read(await round.run({ params, lr: 0.5, ...inputs }))) as { params: unknown }).params).match(/-?[\d.e-]+/g) ?? []).map(Number);
  };
  const start = [0.3, -0.2, 0.1, 0.4, 0.05, -0.05];

  test("with negligible noise it is the plain mean of the updates weighed alike (up to its rounding)", async () => {
    const plain = await run([{ kind: "mean" }], alike);
    const distributed = await run([ddpStage], { ...data, ...keys });
    expect(plain.some((v, i) => Math.abs(v - start[i]!) > 0.01)).toBe(true);
    distributed.forEach((v, i) => expect(Math.abs(v - plain[i]!)).toBeLessThan(1e-3));
  });

  test("attack and zeroing before it act on each client's update first: sign-flip negates the mean step, zeroing at a tiny bound leaves the model", async () => {
    const plain = await run([{ kind: "mean" }], alike);
    const flipped = await run([s.attack("sign-flip"), ddpStage], { ...data, ...keys, malicious: host([3], [1, 1, 1]), attackScale: 1 });
    flipped.forEach((v, i) => expect(Math.abs(v - (2 * start[i]! - plain[i]!))).toBeLessThan(1e-3));
    const zeroed = await run([s.zeroing(1e-9), ddpStage], { ...data, ...keys });
    zeroed.forEach((v, i) => expect(Math.abs(v - start[i]!)).toBeLessThan(1e-3));
  });

  test("the round releases through distributedDpSum only, its clients' keys private CLIENTS inputs, without a loss", () => {
    const round = fedProxProgram(tiny, { aggregator: aggregator(s.zeroing(5), ddpStage) }) as unknown as { aggregators: string[]; signature: string };
    // The number of clients that took part is no secret in distributed DP: a sum of constants.
    expect(round.aggregators).toEqual(["distributedDpSum", "reduceSum"]);
    expect(round.signature).toContain("key=i32[2]@SERVER,round=i32[],clientKeys={i32[2]}@CLIENTS(private)");
    expect(round.signature).toContain("x={f32[S,B,2]}@CLIENTS(private)");
    expect(round.signature).not.toContain("loss=");
  });
});

test("SCAFFOLD takes a releasing chain: its clients' controls are private client state, kept on the clients", () => {
  const round = scaffoldProgram(tiny, { aggregator: aggregator(s.clip(1), s.dp()) });
  expect(round.clientState.length).toBeGreaterThan(0);
  expect(round.clientState.every((path) => path.startsWith("clientControls."))).toBe(true);
  expect(round.signature).toContain("clientControls={<w=f32[2,2],b=f32[2]>}@CLIENTS(private)");
  expect(round.signature).not.toContain("loss=");
});

describe("algorithms that cannot take a chain say why (FT305)", () => {
  test.each([
    [() => qfflProgram(tiny, { aggregator: aggregator(secureStage) }), /FT305: aggregator: qffl cannot take the aggregator secure: q-FFL weighs each client's step/],
    [() => mimeProgram(tiny, "mime", { aggregator: aggregator(s.clip(1), s.dp()) }), /FT305: aggregator: mime cannot take the aggregator clip,dp: Mime aggregates the full-batch gradients/],
    [() => mimeProgram(tiny, "mime", { aggregator: aggregator(ddpStage) }), /FT305: aggregator: mime cannot take the aggregator distributed-dp: Mime aggregates the full-batch gradients .* two releases a round/],
  ])("%#", (make, message) => expect(make).toThrow(message));

  test("MimeLite under dp releases its delta and gradient as one clipped tree: twice the parameters' noise draws", () => {
    const base = { aggregator: "clip,dp", clients: 100, clientsPerRound: 10, dropout: 0, dpClip: 1 as const };
    expect(noiseDrawsPerRound({ ...base, algorithm: "mimelite" }, 6)).toBe(12);
    expect(noiseDrawsPerRound({ ...base, algorithm: "fedprox" }, 6)).toBe(6);
    expect(mimeProgram(tiny, "mimelite", { aggregator: aggregator(s.clip(1), s.dp()) }).aggregators).toEqual(["dpSum"]);
    expect(mimeProgram(tiny, "mimelite", { aggregator: aggregator(ddpStage) }).aggregators).toEqual(["distributedDpSum", "reduceSum"]);
  });
});
