/**
 * Reverse mode through aggregate (aggregate_vjp): gradients of a loss whose clients are
 * folded by custom accumulate, merge and report functions, against float64 finite
 * differences on the reference interpreter, on every backend, and for cohorts of 1 to 4
 * clients (one group, or two of equal or unequal size). Forward mode must agree with it.
 */
import * as tf from "@tensorflow/tfjs";
import { describe, expect, test } from "vitest";
import {
  add,
  aggregate,
  atClients,
  atServer,
  broadcast,
  exp,
  f32,
  FedTensorError,
  full,
  grad,
  interpret,
  jvp,
  map,
  mean,
  mul,
  program,
  sum,
  tanh,
  zeros,
  type Tensor,
} from "../../src/index.js";

type Server3 = Tensor<[3], "float32", "server">;
type Clients = Tensor<[2, 3], "float32", "clients">;

/** A scalar loss of w through a fold whose functions are all nonlinear, and a merge that is not symmetric. */
const loss = (w: Server3, x: Clients) =>
  sum(
    aggregate(map((wm, xm) => tanh(mul(sum(xm), wm)), broadcast(w), x), {
      zero: () => ({ s: zeros([]), v: full([3], 0.5) }),
      accumulate: (acc, m) => ({ s: add(mul(acc.s, 0.5), mean(mul(m, m))), v: add(mul(acc.v, tanh(m)), mul(exp(m), sum(m))) }),
      merge: (a, b) => ({ s: add(a.s, mul(b.s, b.s)), v: add(a.v, mul(b.v, 0.25)) }),
      report: (acc) => add(mul(acc.v, acc.s), tanh(acc.v)),
    }),
  );

const specs = { w: atServer(f32([3])), t: atServer(f32([3])), x: atClients(f32([2, 3])) };
const gradientProgram = program(specs, ({ w, x }) => grad(loss)(w, x));
const lossProgram = program(specs, ({ w, x }) => loss(w, x));
const tangentProgram = program(specs, ({ w, t, x }) => jvp((v: Server3) => loss(v, x), [w], [t])[1]);

const allClients = [[[1, 0, 2], [0.5, 1, -1]], [[0, 1, 1], [2, -1, 0.5]], [[1, -1, 0.5], [0.2, 0.3, -0.4]], [[-0.5, 0.1, 0.3], [0.7, -0.2, 0.1]]];
const cohort = (clients: number) => ({ w: [0.3, -0.2, 0.5], t: [1, 2, -1], x: allClients.slice(0, clients) });

/** Central differences of the loss in float64, one entry of w at a time. */
function finiteDifferences(inputs: ReturnType<typeof cohort>): number[] {
  const h = 1e-6;
  const at = (j: number, by: number) => {
    const out = interpret(lossProgram.ir, { ...inputs, w: inputs.w.map((v, i) => (i === j ? v + by : v)) }) as unknown as { data: Float64Array };
    return out.data[0]!;
  };
  return inputs.w.map((_, j) => (at(j, h) - at(j, -h)) / (2 * h));
}

describe.each([1, 2, 3, 4])("grad through aggregate, %i clients", (clients) => {
  const inputs = cohort(clients);
  const want = finiteDifferences(inputs);

  test("the reference interpreter's gradient is the finite difference", () => {
    const got = Array.from((interpret(gradientProgram.ir, inputs) as unknown as { data: Float64Array }).data);
    got.forEach((g, j) => expect(g).toBeCloseTo(want[j]!, 6));
  });

  test.each(["wasm", "onnx", "cpu"] as const)("the optimised path on %s agrees", async (backend) => {
    const out = await gradientProgram.run(inputs, { backend });
    Array.from(await out.data()).forEach((g, j) => expect(g, `entry ${j}`).toBeCloseTo(want[j]!, 4));
    out.dispose();
  });

  test("forward mode agrees: jvp along t is the gradient dotted with t", async () => {
    const tangent = await tangentProgram.run(inputs, { backend: "onnx" });
    const [value] = await tangent.data();
    expect(value).toBeCloseTo(want.reduce((acc, g, j) => acc + g * inputs.t[j]!, 0), 4);
    tf.dispose(tangent);
  });
});

test("a gradient through aggregate's zero() or its captured values is refused with FT211", () => {
  type Local3 = Tensor<[3], "float32", "local">;
  const localSpecs = { w: f32([3]), x: atClients(f32([2, 3])) };
  const fold = (zero: () => Local3, scale: Local3) => ({
    zero,
    accumulate: (acc: Tensor<[3], "float32", "member">, m: Tensor<[2, 3], "float32", "member">) => add(acc, sum(m, 0)),
    merge: (a: Tensor<[3], "float32", "member">, b: Tensor<[3], "float32", "member">) => add(a, b),
    report: (acc: Tensor<[3], "float32", "member">) => mul(acc, scale),
  });
  const captured = () => program(localSpecs, ({ w, x }) => grad((v: Local3) => sum(aggregate(x, fold(() => zeros([3]), v))))(w));
  const fromZero = () => program(localSpecs, ({ w, x }) => grad((v: Local3) => sum(aggregate(x, fold(() => mul(v, 2), full([3], 1)))))(w));
  for (const make of [captured, fromZero]) {
    expect(make).toThrow(FedTensorError);
    expect(make).toThrow(/^FT211: grad\(\) cannot differentiate through aggregate\(\)'s zero\(\) or a value its functions capture/);
  }
});

test("a second derivative through aggregate is FT211, in either mode", () => {
  const twice = () => program(specs, ({ w, x }) => grad((v: Server3) => sum(grad(loss)(v, x)))(w));
  const forwardOverReverse = () => program(specs, ({ w, t, x }) => jvp((v: Server3) => grad(loss)(v, x), [w], [t]));
  expect(twice).toThrow(/^FT211: grad\(\) cannot differentiate through aggregate\(\) twice/);
  expect(forwardOverReverse).toThrow(/^FT211: jvp\(\) cannot differentiate through the gradient of aggregate\(\)/);
});
