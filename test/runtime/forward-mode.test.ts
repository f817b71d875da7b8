/**
 * Forward mode (jvp) against reverse mode and the reference interpreter: for a function f,
 * the tangent along t must satisfy <jvp(f)(x, t), u> = <t, vjp(f)(x, u)>, here with f scalar
 * (u = 1), so jvp(f)(x, t) = <grad f(x), t>; and across map, scan and the reductions.
 */
import * as tf from "@tensorflow/tfjs";
import { describe, expect, test } from "vitest";
import { add, aggregate, atClients, atServer, broadcast, exp, f32, FedTensorError, full, grad, interpret, jvp, map, matmul, mean, mul, program, reduceMean, scan, sigmoid, softmax, sub, sum, tanh, zeros, type Tensor } from "../../src/index.js";

type Server3 = Tensor<[3], "float32", "server">;
const loss = (w: Server3, x: Tensor<[2, 3], "float32", "clients">) =>
  reduceMean(
    map((wm, xm) => {
      const [final] = scan(wm, xm, (p, row) => [sub(p, mul(sigmoid(mul(p, row)), 0.1)), undefined] as const);
      return sum(softmax(mul(exp(final), final)));
    }, broadcast(w), x),
  );

const inputs = { w: [0.3, -0.2, 0.5], t: [1, 2, -1], x: [[[1, 0, 2], [0.5, 1, -1]], [[0, 1, 1], [2, -1, 0.5]]] };

describe("forward mode", () => {
  test("jvp along t equals the gradient dotted with t, through map, scan and reductions", async () => {
    const p = program({ w: atServer(f32([3])), t: atServer(f32([3])), x: atClients(f32([2, 3])) }, ({ w, t, x }) => {
      const [value, tangent] = jvp((v: Server3) => loss(v, x), [w], [t]);
      return { value, tangent, gradient: grad(loss)(w, x) };
    });
    const out = await p.run(inputs);
    const [tangent] = await out.tangent.data();
    const g = Array.from(await out.gradient.data());
    expect(tangent).toBeCloseTo(g.reduce((acc, gi, i) => acc + gi * inputs.t[i]!, 0), 5);
    // The reference interpreter computes the same tangent.
    const reference = interpret(p.ir, inputs) as unknown as { tangent: { data: Float64Array } };
    expect(tangent).toBeCloseTo(reference.tangent.data[0]!, 5);
    tf.dispose([out.value, out.tangent, out.gradient]);
  });

  // aggregate has no reverse-mode rule (FT211), so its tangent is checked against a central
  // difference of the reference interpreter in float64, and the optimised paths against that.
  test("jvp through aggregate: accumulate, merge and report carry tangents beside their values", async () => {
    const f = (w: Server3, x: Tensor<[2, 3], "float32", "clients">) =>
      aggregate(map((wm, xm) => tanh(mul(sum(xm), wm)), broadcast(w), x), {
        zero: () => ({ s: zeros([]), v: full([3], 0.5) }),
        accumulate: (acc, m) => ({ s: add(mul(acc.s, 0.5), mean(m)), v: add(acc.v, mul(exp(m), sum(m))) }),
        merge: (a, b) => ({ s: add(a.s, mul(b.s, b.s)), v: add(a.v, mul(b.v, 0.25)) }),
        report: (acc) => add(mul(acc.v, acc.s), tanh(acc.v)),
      });
    const specs = { w: atServer(f32([3])), t: atServer(f32([3])), x: atClients(f32([2, 3])) };
    const tangentProgram = program(specs, ({ w, t, x }) => jvp((v: Server3) => f(v, x), [w], [t])[1]);
    const valueProgram = program(specs, ({ w, x }) => f(w, x));
    const x3 = [...inputs.x, [[1, -1, 0.5], [0.2, 0.3, -0.4]]];
    const at = (s: number) => ({ ...inputs, x: x3, w: inputs.w.map((wi, i) => wi + s * inputs.t[i]!) });
    const h = 1e-6;
    const [plus, minus] = [h, -h].map((s) => Array.from((interpret(valueProgram.ir, at(s)) as unknown as { data: Float64Array }).data));
    const want = plus!.map((p, i) => (p - minus![i]!) / (2 * h));
    const reference = Array.from((interpret(tangentProgram.ir, at(0)) as unknown as { data: Float64Array }).data);
    reference.forEach((r, i) => expect(r).toBeCloseTo(want[i]!, 6));
    for (const backend of ["wasm", "onnx"] as const) {
      const out = await tangentProgram.run(at(0), { backend });
      Array.from(await out.data()).forEach((v, i) => expect(v, backend).toBeCloseTo(want[i]!, 4));
      out.dispose();
    }
  });

  test("a non-scalar function: the tangent of matmul along both operands", async () => {
    const p = program({ a: f32([2, 2]), b: f32([2, 2]), ta: f32([2, 2]), tb: f32([2, 2]) }, ({ a, b, ta, tb }) => jvp(matmul, [a, b], [ta, tb]));
    const [value, tangent] = (await p.run({ a: [[1, 2], [3, 4]], b: [[0, 1], [1, 0]], ta: [[1, 0], [0, 1]], tb: [[1, 1], [0, 0]] })) as unknown as tf.Tensor[];
    expect(await value!.array()).toEqual([[2, 1], [4, 3]]);
    // ta b + a tb = [[0,1],[1,0]] + [[1,1],[3,3]]
    expect(await tangent!.array()).toEqual([[1, 2], [4, 3]]);
    tf.dispose([value!, tangent!]);
  });

  // A constant tangent (local) for a SERVER primal is allowed by the types and the docs; it
  // used to reach broadcast's tangent rule unplaced and fail with FT101.
  test("a local tangent for a SERVER primal: jvp through broadcast, in a program without private data", async () => {
    const p = program({ w: atServer(f32([3])), x: atClients(f32([2, 3])) }, ({ w, x }) => {
      const [, tangent] = jvp((v: Server3) => loss(v, x), [w], [full([3], 1)]);
      return { tangent, gradient: grad(loss)(w, x) };
    });
    const out = await p.run({ w: inputs.w, x: inputs.x });
    const [tangent] = await out.tangent.data();
    const g = Array.from(await out.gradient.data());
    expect(tangent).toBeCloseTo(g.reduce((acc, gi) => acc + gi, 0), 5);
    tf.dispose([out.tangent, out.gradient]);
  });

  test("tangents must have the primals' shapes", () => {
    const trace = () => program({ a: f32([3]), t: f32([2]) }, ({ a, t }) => jvp(exp, [a], [t as never])[1]);
    expect(trace).toThrowError(FedTensorError);
    expect(trace).toThrowError("FT206: jvp() needs an f32 tangent of its primal's shape at [0]: f32[3] vs f32[2]");
  });
});
