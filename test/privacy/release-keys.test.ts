/**
 * The keys and options of releasing mechanisms (docs/language.md "Privacy"), attacked: a
 * constant or local key (anyone can regenerate the noise), one key for two releases (their
 * difference is exact), a key that does not change from one loop step to the next, a noise
 * multiplier of 0 (as a constant or a program input), a secure sum over too few clients;
 * and what program.privacy and `fedtensor ir --signature` say of each release.
 */
import { describe, expect, test, vi } from "vitest";
import { atClients, atServer, broadcast, dpSum, f32, foldIn, fori, grad, i32, map, mul, program, randomKey, secureSum, split, sub, sum } from "../../src/index.js";
import { host, read } from "../lib/helpers.js";
import { failure } from "./failure.js";

const inputs = { x: atClients(f32([3]), { private: true }), key: atServer(i32([2])), localKey: i32([2]), z: atServer(f32([])) };
const cohort = { x: host([2, 3], [0.5, -0.25, 0.1, 0.3, 0.2, -0.4]), key: [3, 9], localKey: [1, 2], z: 1 };
type Loose = (...args: unknown[]) => never;
const looseDp = dpSum as unknown as Loose;
const looseSecure = secureSum as unknown as Loose;
const secure = { bits: 20, range: [-1, 1], scale: 1000 } as const;


describe("a release's key is secret: a SERVER program input, or split/foldIn of one (FT110)", () => {
  const secret = "key must be a secret key: a SERVER program input (atServer(i32([2])) fed from node:crypto), or split/foldIn of one, got";
  test("a constant key, randomKey(0) or derived from it, is FT110 for dpSum and secureSum", () => {
    expect(failure(() => program(inputs, ({ x }) => looseDp(x, { clip: 1, noiseMultiplier: 1, key: randomKey(0) })))).toBe(
      `FT110: dpSum() ${secret} a constant key (randomKey([0,0]) or a literal): anyone who reads the program can regenerate the noise or masks`,
    );
    expect(failure(() => program(inputs, ({ x }) => looseSecure(x, { ...secure, key: foldIn(randomKey(7), 3) })))).toMatch(/^FT110: secureSum\(\) key must be a secret key.*a constant key/);
  });

  test("a local program input, or a key computed by other operations, is FT110", () => {
    expect(failure(() => program(inputs, ({ x, localKey }) => looseDp(x, { clip: 1, noiseMultiplier: 1, key: localKey })))).toBe(`FT110: dpSum() ${secret} the local program input i32[2]`);
    expect(failure(() => program(inputs, ({ x, key }) => looseDp(x, { clip: 1, noiseMultiplier: 1, key: mul(key, 1) })))).toBe(`FT110: dpSum() ${secret} a key computed by mul, not by split or foldIn`);
  });

  test("a constant key carried by a loop or passed to a differentiated function is found from where it starts", () => {
    const server = { w: atServer(f32([3])), ...inputs };
    const carried = () =>
      program(server, ({ w, x }) =>
        fori(2, { w, k: randomKey(0) }, (i, s) => ({ w: sub(s.w, looseDp(map((vm, xm) => mul(vm, xm), broadcast(s.w), x), { clip: 1, noiseMultiplier: 1, key: foldIn(s.k, i) })), k: s.k })).w,
      );
    expect(failure(carried)).toMatch(/^FT110: dpSum\(\) key must be a secret key.*a constant key/);
    const argument = () =>
      // @ts-expect-error FT109 in tsc too (a gradient through a release, src/front/grad.ts): traced here all the same
      program(server, ({ w, x }) => grad((v: typeof w, k: ReturnType<typeof randomKey>) => sum(dpSum(map((vm, xm) => mul(vm, xm), broadcast(v), x), { clip: 1, noiseMultiplier: 1, key: k as never })))(w, randomKey(1)));
    expect(failure(argument)).toMatch(/^FT110: dpSum\(\) key must be a secret key.*a constant key/);
  });

  test("a SERVER input key, split or folded, is accepted", () => {
    const p = program(inputs, ({ x, key }) => {
      const [a, b] = split(foldIn(key, 5));
      return { noisy: dpSum(x, { clip: 1, noiseMultiplier: 1, key: a }), masked: secureSum(x, { ...secure, key: b }) };
    });
    expect(p.privacy).toHaveLength(2);
  });
});

describe("a key feeds at most one release (FT111)", () => {
  test("two dpSums with one key (the same noise: their difference is exact)", () => {
    const message = failure(() => program(inputs, ({ x, key }) => ({ a: dpSum(x, { clip: 1, noiseMultiplier: 1, key }), b: dpSum(x, { clip: 2, noiseMultiplier: 1, key }) })));
    expect(message).toBe("FT111: dpSum() key is the key of an earlier dpSum(): a key feeds at most one release");
  });

  test("two secureSums with one key (reused masks), and the same derivation written twice", () => {
    expect(failure(() => program(inputs, ({ x, key }) => ({ a: secureSum(x, { ...secure, key }), b: secureSum(x, { ...secure, key }) })))).toMatch(/^FT111: secureSum\(\) key is the key of an earlier secureSum\(\)/);
    expect(
      failure(() => program(inputs, ({ x, key }) => ({ a: dpSum(x, { clip: 1, noiseMultiplier: 1, key: foldIn(key, 3) }), b: secureSum(x, { ...secure, key: foldIn(key, 3) }) }))),
    ).toMatch(/^FT111: secureSum\(\) key is the key of an earlier dpSum\(\)/);
  });

  test("a key and a key derived from it (a release with key, another with split(key)[0])", () => {
    const message = failure(() => program(inputs, ({ x, key }) => ({ a: dpSum(x, { clip: 1, noiseMultiplier: 1, key }), b: dpSum(x, { clip: 1, noiseMultiplier: 1, key: split(key)[0] }) })));
    expect(message).toBe("FT111: dpSum() key is derived from (or the origin of) the key of an earlier dpSum(): a key feeds at most one release");
  });

  test("a loop whose key does not change from step to step; foldIn of the loop index is fresh", () => {
    const server = { w: atServer(f32([3])), ...inputs };
    expect(failure(() => program(server, ({ w, x, key }) => fori(3, w, (_i, v) => sub(v, mul(dpSum(map((vm, xm) => mul(vm, xm), broadcast(v), x), { clip: 1, noiseMultiplier: 1, key }), 0.1)))))).toBe(
      "FT111: dpSum() key is the same in every step of the enclosing fori() (it depends on neither the loop index nor the carry): fold the loop index in: a key feeds at most one release",
    );
    // Passing the key through a differentiated function inside the loop does not hide it.
    const throughGrad = () =>
      program(server, ({ w, x, key }) =>
        // @ts-expect-error FT109 in tsc too (a gradient through a release, src/front/grad.ts): traced here all the same
        fori(3, w, (_i, v) => sub(v, grad((u: typeof v, k: typeof key) => sum(dpSum(map((um, xm) => mul(um, xm), broadcast(u), x), { clip: 1, noiseMultiplier: 1, key: k })))(v, key))),
      );
    expect(failure(throughGrad)).toMatch(/^FT111: dpSum\(\) key is the same in every step of the enclosing fori\(\)/);
    const fresh = program(server, ({ w, x, key }) => fori(3, w, (i, v) => sub(v, mul(dpSum(map((vm, xm) => mul(vm, xm), broadcast(v), x), { clip: 1, noiseMultiplier: 1, key: foldIn(key, i) }), 0.1))));
    expect(fresh.privacy).toEqual(["dpSum #0: Gaussian mechanism, clip 1, noise multiplier 1, rho = 0.5 zCDP per call, called 3 times (loops)"]);
  });
});

describe("dpSum's clip and noise multiplier are > 0 (FT110)", () => {
  test("constants at trace time: noiseMultiplier 0 would release the exact clipped sum", () => {
    expect(failure(() => program(inputs, ({ x, key }) => looseDp(x, { clip: 1, noiseMultiplier: 0, key })))).toBe("FT110: dpSum() noiseMultiplier must be a finite number > 0, got 0");
    expect(failure(() => program(inputs, ({ x, key }) => looseDp(x, { clip: 0, noiseMultiplier: 1, key })))).toBe("FT110: dpSum() clip must be a finite number > 0, got 0");
    expect(failure(() => program(inputs, ({ x, key }) => looseDp(x, { clip: 1, noiseMultiplier: -2, key })))).toBe("FT110: dpSum() noiseMultiplier must be a finite number > 0, got -2");
  });

  test("a program input that feeds one: checked when the program runs, before anything is computed", async () => {
    const p = program(inputs, ({ x, key, z }) => dpSum(x, { clip: 1, noiseMultiplier: z, key }));
    for (const z of [0, -1, Number.NaN, Number.POSITIVE_INFINITY]) {
      await expect(p.run({ ...cohort, z } as never)).rejects.toThrow(`FT110: dpSum() noiseMultiplier must be a finite number > 0 (the program input that feeds it), got ${z}`);
    }
    const out = (await read(await p.run(cohort as never))) as unknown as number[];
    expect(out.every(Number.isFinite)).toBe(true);
    // A round streamed in chunks (fedtensor run --chunk-clients, the BullMQ engine) checks it too.
    const { runStreamed } = await import("../../src/runtime/mapreduce.js");
    const round = { inputs: { key: [3, 9], localKey: [1, 2], z: 0 }, cohortSize: 2, chunks: [{ x: cohort.x }] };
    await expect(async () => runStreamed(p.ir, round)).rejects.toThrow("FT110: dpSum() noiseMultiplier must be a finite number > 0 (the program input that feeds it), got 0");
  });
});

describe("secureSum refuses small cohorts (FT112) and says what it is", () => {
  test("minClients below 2, or maxClients below it, is FT312 while tracing", () => {
    expect(failure(() => program(inputs, ({ x, key }) => looseSecure(x, { ...secure, key, minClients: 1 })))).toMatch(/^FT312: secureSum minClients: expected a whole number >= 2/);
    expect(failure(() => program(inputs, ({ x, key }) => looseSecure(x, { ...secure, key, minClients: 5, maxClients: 4 })))).toMatch(/^FT312: secureSum maxClients: expected a whole number >= minClients \(5\)/);
  });

  test("a cohort of one client is FT112 when the program runs (its sum would be its value)", async () => {
    const p = program(inputs, ({ x, key }) => secureSum(x, { ...secure, key }));
    await expect(p.run({ ...cohort, x: host([1, 3], [0.5, -0.25, 0.1]) } as never)).rejects.toThrow("FT112: secureSum() needs at least 2 clients, got 1");
  });

  test("program.privacy and the signature: dpSum's cost as zCDP rho = 1/(2 z^2), secureSum an exact sum, simulated", () => {
    const p = program(inputs, ({ x, key, z }) => {
      const [a, b, c] = split(key, 3);
      return { fixed: dpSum(x, { clip: 0.5, noiseMultiplier: 1.1, key: a }), tuned: dpSum(x, { clip: 1, noiseMultiplier: z, key: b }), exact: secureSum(x, { ...secure, key: c, minClients: 3 }) };
    });
    expect(p.privacy).toEqual([
      "dpSum #0: Gaussian mechanism, clip 0.5, noise multiplier 1.1, rho = 0.4132 zCDP per call, called once",
      "dpSum #1: Gaussian mechanism, clip 1, noise multiplier input z (checked > 0 when run), rho = 1/(2 z^2) zCDP per call, called once",
      "secureSum #2: exact sum, no DP (masks simulated in one process), at least 3 clients, called once",
    ]);
    expect(p.signature).toMatch(/ \[secureSum of private data: exact sum, no DP; secureSum simulated in one process: the server derives every pair key\]$/);
    const plain = program({ n: atClients(i32([3])), key: atServer(i32([2])) }, ({ n, key }) => secureSum(n, { bits: 12, key, range: [0, 9] }));
    expect(plain.signature).toBe("(<n={i32[3]}@CLIENTS,key=i32[2]@SERVER> -> i32[3]@SERVER) [secureSum simulated in one process: the server derives every pair key]");
  });
});

test("`fedtensor ir --signature` lists the releases under the aggregations", async () => {
  const { irCommand } = await import("../../src/cli/ir.js");
  const lines: string[] = [];
  const log = vi.spyOn(console, "log").mockImplementation((line: string) => void lines.push(line));
  try {
    expect(await irCommand.run(["examples/federated-analytics.ts", "privateLabelHistogram", "--signature"])).toBe(0);
  } finally {
    log.mockRestore();
  }
  expect(lines[0]!.split("\n").slice(1)).toEqual(["  federated_dp_sum: ({f32[10]}@CLIENTS(private) -> f32[10]@SERVER)", "  dpSum #0: Gaussian mechanism, clip 600, noise multiplier 1, rho = 0.5 zCDP per call, called once"]);
});
