/**
 * dpMean: dpSum divided by the expected cohort size m. Its value (the clipped sum / m), its
 * noise (standard deviation z C / m), and that keys, program.privacy, FT110 and gradients are
 * dpSum's, by construction.
 */
import { describe, expect, test } from "vitest";
import { atClients, atServer, broadcast, dpMean, dpSum, f32, grad, i32, map, mul, program, split, sum, type Tensor } from "../../src/index.js";
import { host, read } from "../lib/helpers.js";
import { ftFailureAsync as failure } from "./failure.js";

const inputs = { u: atClients({ a: f32([2]), b: f32([1]) }, { private: true }), m: atServer(f32([])), key: atServer(i32([2])) };
// Client 0's tree (3, 4 | 0) has norm 5: clipped to C = 1 it is (0.6, 0.8 | 0); client 1's (0.1, 0 | 0.2) is within C.
const cohort = { u: { a: host([2, 2], [3, 4, 0.1, 0]), b: host([2, 1], [0, 0.2]) }, m: 4, key: [0, 5] };


describe("dpMean", () => {
  test("is the clipped sum divided by the expected cohort size (an input here), not by the cohort's", async () => {
    const p = program(inputs, ({ u, m, key }) => dpMean(u, { clip: 1, noiseMultiplier: 1e-30, key, expectedClients: m }));
    const out = (await read(await p.run(cohort))) as unknown as { a: number[]; b: number[] };
    expect(out.a[0]).toBeCloseTo(0.7 / 4, 6);
    expect(out.a[1]).toBeCloseTo(0.8 / 4, 6);
    expect(out.b[0]).toBeCloseTo(0.2 / 4, 6);
    // A constant m gives the same.
    const constant = program(inputs, ({ u, key }) => dpMean(u, { clip: 1, noiseMultiplier: 1e-30, key, expectedClients: 4 }));
    expect(((await read(await constant.run(cohort))) as unknown as { a: number[] }).a[0]).toBeCloseTo(0.7 / 4, 6);
  });

  test("adds noise of standard deviation z C / m to every coordinate (1e5 draws)", async () => {
    const wide = program({ u: atClients(f32([100_000]), { private: true }), key: atServer(i32([2])) }, ({ u, key }) =>
      dpMean(u, { clip: 2, noiseMultiplier: 0.5, key, expectedClients: 8 }),
    );
    const noise = (await read(await wide.run({ u: host([3, 100_000], new Array(300_000).fill(0)), key: [1, 2] }))) as unknown as number[];
    const mean = noise.reduce((s, v) => s + v, 0) / noise.length;
    const std = Math.sqrt(noise.reduce((s, v) => s + (v - mean) ** 2, 0) / (noise.length - 1));
    // z C / m = 0.125; standard errors: mean 0.125 / sqrt(1e5) ~ 4e-4, std 0.125 / sqrt(2e5) ~ 2.8e-4.
    expect(Math.abs(mean)).toBeLessThan(0.002);
    expect(Math.abs(std - 0.125)).toBeLessThan(0.0015);
  });

  test("is one dpSum release in the IR: program.privacy, aggregators and the signature are dpSum's", () => {
    const p = program(inputs, ({ u, m, key }) => dpMean(u, { clip: 1, noiseMultiplier: 2, key, expectedClients: m }));
    expect(p.aggregators).toEqual(["dpSum"]);
    expect(p.privacy).toEqual(["dpSum #0: Gaussian mechanism, clip 1, noise multiplier 2, rho = 0.125 zCDP per call, called once"]);
    expect(p.signature).toBe("(<u={<a=f32[2],b=f32[1]>}@CLIENTS(private),m=f32[]@SERVER,key=i32[2]@SERVER> -> <a=f32[2],b=f32[1]>@SERVER)");
  });

  test("its options are dpSum's, > 0, with messages naming dpMean; its key feeds one release (FT111)", async () => {
    const loose = dpMean as (...args: unknown[]) => never;
    const bad = (options: object) => failure(() => program(inputs, ({ u, key }) => loose(u, { clip: 1, noiseMultiplier: 1, key, ...options })));
    expect((await bad({ expectedClients: 0 })).message).toBe("FT110: dpMean() expectedClients must be a finite number > 0, got 0");
    expect((await bad({ expectedClients: -3 })).code).toBe("FT110");
    expect((await bad({ expectedClients: 3, clip: Number.NaN })).message).toBe("FT110: dpMean() clip must be a finite number > 0, got NaN");
    const reused = await failure(() =>
      program(inputs, ({ u, key }) => {
        const first = dpSum(u, { clip: 1, noiseMultiplier: 1, key });
        const second = dpMean(u, { clip: 1, noiseMultiplier: 1, key, expectedClients: 3 });
        return { first, second };
      }),
    );
    expect(reused.message).toMatch(/^FT111: dpMean\(\) .*the key of an earlier dpSum\(\)/);
    // Two fresh keys split from one: fine.
    expect(() =>
      program(inputs, ({ u, key }) => {
        const [k1, k2] = split(key, 2);
        return { first: dpSum(u, { clip: 1, noiseMultiplier: 1, key: k1 }), second: dpMean(u, { clip: 1, noiseMultiplier: 1, key: k2, expectedClients: 3 }) };
      }),
    ).not.toThrow();
  });

  test("attack: the gradient of a dpMean round with respect to the SERVER model is FT109 (its noise does not protect it)", async () => {
    const attack = { w: atServer(f32([3])), x: atClients(f32([3]), { private: true }), key: atServer(i32([2])) };
    const error = await failure(() =>
      program(attack, ({ w, x, key }) =>
        // @ts-expect-error FT109 in tsc too (a gradient through a release, src/front/grad.ts): traced here all the same
        grad((v: Tensor<[3], "float32", "server">) => sum(dpMean(map((vm, xm) => mul(vm, xm), broadcast(v), x), { clip: 1, noiseMultiplier: 1, key, expectedClients: 10 })))(w),
      ),
    );
    expect(error.code).toBe("FT109");
  });
});
