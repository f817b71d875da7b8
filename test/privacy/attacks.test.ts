/**
 * Attacks on the privacy rules of the language (docs/language.md "Privacy"), each a program
 * that would leak and must be rejected while tracing, beside the form that is allowed:
 * derivatives through dpSum and secureSum (jvp, grad, vjp in either mode), a SERVER loop of DP
 * rounds, secret and fresh keys, dpSum's options, and secureSum's smallest cohort.
 */
import { describe, expect, test } from "vitest";
import {
  add,
  atClients,
  atServer,
  broadcast,
  dpSum,
  f32,
  foldIn,
  fori,
  grad,
  i32,
  jvp,
  map,
  mean,
  mul,
  program,
  reduceSum,
  secureSum,
  split,
  sub,
  sum,
  valueAndGrad,
  type Tensor,
} from "../../src/index.js";
import { host, read } from "../lib/helpers.js";
import { failure } from "./failure.js";

type Server3 = Tensor<[3], "float32", "server">;
type Key = Tensor<[2], "int32", "server">;
const inputs = { w: atServer(f32([3])), t: atServer(f32([3])), x: atClients(f32([3]), { private: true }), key: atServer(i32([2])) };
const cohort = { w: [1, 2, 3], t: [1, 0, 0], x: host([2, 3], [0.5, -0.25, 0.1, 0.3, 0.2, -0.4]), key: [3, 9] };


const released = "would release private client data";

describe("derivatives do not declassify", () => {
  // A DP round of a linear model: its tangent along t is sum_i clip(w . x_i) (t . x_i), exact.
  const noisyRound = (key: Key, x: unknown) => (v: Server3) => sum(dpSum(map((vm, xm) => mul(vm, xm), broadcast(v), x as never), { clip: 1, noiseMultiplier: 1, key }));
  const noisyClients = (key: Key) => (m: Tensor<[3], "float32", "clients">) => sum(dpSum(m, { clip: 1, noiseMultiplier: 1, key }));
  const masked = (key: Key, x: unknown) => (v: Server3) => sum(secureSum(map((vm, xm) => mul(vm, xm), broadcast(v), x as never), { bits: 24, key, range: [-100, 100], scale: 1000 }));

  test("jvp through dpSum, the model broadcast outside the jvp: its tangent is the exact sum, FT109", () => {
    // tsc rejects this call too (TangentReleaseCheck, test-d/privacy-leaks.test-d.ts); the cast lets tracing be tested.
    const message = failure(() =>
      program(inputs, ({ w, t, x, key }) => {
        const members = map((vm, xm) => mul(vm, xm), broadcast(w), x);
        const direction = map((tm, xm) => mul(tm, xm), broadcast(t), x);
        return jvp((m: typeof members) => dpSum(m, { clip: 100, noiseMultiplier: 1, key }), [members], [direction] as never)[1];
      }),
    );
    expect(message).toMatch(/^FT109: the tangent of dpSum\(\) or secureSum\(\) \(jvp: a derivative with respect to private data/);
  });

  test("jvp through dpSum or secureSum with the model broadcast inside: FT109", () => {
    expect(failure(() => program(inputs, ({ w, t, x, key }) => jvp(noisyRound(key, x), [w], [t])[1]))).toMatch(/^FT109: the tangent of dpSum/);
    expect(failure(() => program(inputs, ({ w, t, x, key }) => jvp(masked(key, x), [w], [t])[1]))).toMatch(/^FT109: the tangent of dpSum\(\) or secureSum/);
  });

  test("jvp with respect to the private data itself: the tangent is private even where it would not depend on the data", () => {
    // secureSum is linear: its tangent along a constant direction is the sum of the direction, yet it is a derivative with respect to private data.
    const message = failure(() =>
      program(inputs, ({ t, x, key }) => jvp((m: typeof x) => secureSum(m, { bits: 24, key, range: [-100, 100], scale: 1000 }), [x], [broadcast(t)])[1]),
    );
    expect(message).toBe(
      `FT109: the tangent of dpSum() or secureSum() (jvp: a derivative with respect to private data, which the noise or masks do not protect) ${released}, got {f32[3]}@CLIENTS(private): only a DP or secure aggregator (dpSum, secureSum) may take it to the SERVER`,
    );
  });

  test("grad and valueAndGrad through dpSum or secureSum with respect to the SERVER model: FT109", () => {
    for (const differentiate of [(f: (v: Server3) => Tensor<[], "float32", "server">, w: Server3) => grad(f)(w), (f: (v: Server3) => Tensor<[], "float32", "server">, w: Server3) => valueAndGrad(f)(w)[1]]) {
      expect(failure(() => program(inputs, ({ w, x, key }) => differentiate(noisyRound(key, x), w)))).toMatch(/^FT109: a gradient through broadcast\(\)/);
      expect(failure(() => program(inputs, ({ w, x, key }) => differentiate(masked(key, x), w)))).toMatch(/^FT109: a gradient through broadcast\(\)/);
    }
  });

  // The same leaks written with their types: tsc rejects each (a gradient of a released value
  // with respect to what it was computed from, src/front/grad.ts), and tracing does too.
  const typedInputs = { params: atServer(f32([3])), readings: atClients(f32(["N", 3]), { private: true }), key: atServer(i32([2])) };
  const typedLeaks = {
    "the gradient with respect to the SERVER model": () =>
      program(typedInputs, ({ params, readings, key }) =>
        // @ts-expect-error FT109: grad()'s gradient through a release (dpSum, secureSum)
        grad((p: typeof params) => sum(dpSum(map((w, r) => mul(w, mean(r, 0)), broadcast(p), readings), { clip: 1, noiseMultiplier: 1, key })))(params),
      ),
    "the gradient with respect to the broadcast model copy": () =>
      program(typedInputs, ({ params, readings, key }) => {
        const copy = broadcast(params);
        // @ts-expect-error FT109: each client's entry is the derivative through dpSum of that client's data
        const g = grad((w: typeof copy) => sum(dpSum(map((m, r) => mul(m, mean(r, 0)), w, readings), { clip: 1, noiseMultiplier: 1, key })))(copy);
        return reduceSum(g);
      }),
    "the same through secureSum": () =>
      program(typedInputs, ({ params, readings, key }) => {
        const copy = broadcast(params);
        // @ts-expect-error FT109: the masks do not reach a derivative
        const g = grad((w: typeof copy) => sum(secureSum(map((m, r) => mul(m, mean(r, 0)), w, readings), { bits: 20, key, range: [-1, 1], scale: 1000 })))(copy);
        return reduceSum(g);
      }),
  };
  test.each(Object.entries(typedLeaks))("typed: %s is FT109 in tsc and when traced", (_name, build) => {
    expect(failure(build)).toMatch(/^FT109: /);
  });

  test("grad and jvp through a loop of DP rounds (reverse and forward over the loop): FT109", () => {
    const rounds = (key: Key, x: unknown) => (v: Server3) =>
      sum(fori(2, v, (i, m) => sub(m, mul(dpSum(map((mm, xm) => mul(mm, xm), broadcast(m), x as never), { clip: 1, noiseMultiplier: 1, key: foldIn(key, i) }), 0.1))));
    expect(failure(() => program(inputs, ({ w, x, key }) => grad(rounds(key, x))(w)))).toMatch(/^FT109: a gradient through broadcast\(\)/);
    expect(failure(() => program(inputs, ({ w, t, x, key }) => jvp(rounds(key, x), [w], [t])[1]))).toMatch(/^FT109: the tangent of dpSum/);
  });

  test("the gradient with respect to private CLIENTS data is private: returning it is FT109", () => {
    const message = failure(() => program(inputs, ({ x, key }) => grad(noisyClients(key))(x as never)));
    expect(message).toMatch(/^FT109: the program's result would release private client data, got \{f32\[3\]\}@CLIENTS\(private\)/);
  });

  test("without private data, the same derivatives trace and run", async () => {
    const plain = { ...inputs, x: atClients(f32([3])) };
    const p = program(plain, ({ w, t, x, key }) => {
      const [a, b] = split(key);
      return { tangent: jvp(noisyRound(a, x), [w], [t])[1], gradient: grad(masked(b, x))(w) };
    });
    const out = (await read(await p.run(cohort as never))) as unknown as { tangent: number; gradient: number[] };
    expect(Number.isFinite(out.tangent)).toBe(true);
    // The gradient of sum(secureSum(w * x_i)) is the sum of the x_i (up to the quantization).
    [0.8, -0.05, -0.3].forEach((v, i) => expect(out.gradient[i]).toBeCloseTo(v, 5));
  });
});

describe("a SERVER loop of DP rounds", () => {
  test("traces when the data leaves only through dpSum: the model stays free", () => {
    const p = program(inputs, ({ w, x, key }) =>
      fori(3, w, (i, v) => {
        const step = dpSum(map((vm, xm) => mul(vm, xm), broadcast(v), x), { clip: 1, noiseMultiplier: 1, key: foldIn(key, i) });
        return sub(v, mul(step, 0.1));
      }),
    );
    expect(p.signature).toBe("(<w=f32[3]@SERVER,t=f32[3]@SERVER,x={f32[3]}@CLIENTS(private),key=i32[2]@SERVER> -> f32[3]@SERVER)");
  });

  test("a leak in a later step is found: a carry made private by one step is private in the next (fixed point)", () => {
    const state = { ...inputs, c: atClients(f32([3])) };
    // Step 1 puts private data in the CLIENTS carry; a plain sum of the carry in step 2 would release it.
    const message = failure(() =>
      program(state, ({ w, x, c, key }) =>
        fori(2, { c, w }, (_i, s) => ({ c: x, w: add(s.w, reduceSum(s.c)) })).w,
      ),
    );
    expect(message).toBe(`FT109: reduceSum() ${released}, got {f32[3]}@CLIENTS(private): only a DP or secure aggregator (dpSum, secureSum) may take it to the SERVER`);
  });
});
