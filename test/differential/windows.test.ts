/**
 * Differential tests of what the random programs of programs.ts do not generate: convolution
 * and pooling with their gradients (TensorFlow's SAME padding, strides that skip pixels, ties
 * in a pooling window), and integer and boolean operations. The optimised path on onnx, tfjs
 * wasm and tfjs cpu must agree with the reference interpreter (harness.ts), whose window rules
 * are checked by hand in test/interpret/windows.test.ts. These cases found the wasm kernels
 * that tfjs-windows.ts works around: SAME convolutions with a stride above the kernel,
 * MaxPoolGrad, int32 matmul, casts to bool, bool select and out-of-range one-hot indices.
 * Where Dawn finds an adapter, webgpu runs them too.
 */
import fc from "fast-check";
import { test } from "vitest";
import * as ft from "../../src/index.js";
import type { InputTree } from "../../src/interpret/reference.js";
import { webgpu } from "../helpers/test-backends.js";
import { checkAgreement, propertySettings, type Backend } from "./harness.js";
import type { GeneratedProgram } from "./programs.js";
import { deadline } from "../helpers/deadline.js";

/** The operations with their static shape checks left out: the shapes here are data. */
const op = ft as unknown as Record<string, (...args: any[]) => any>;

/** Multiples of 1/8 in [-1, 1] (exact in float32, and ties in pooling windows are common). */
const values = (size: number, seed: number) => Array.from({ length: size }, (_, i) => (((i * 7919 + seed * 104729) % 17) - 8) / 8);
const data = (shape: readonly number[], seed: number) => ({ shape: [...shape], data: values(shape.reduce((n, d) => n * d, 1), seed) });

const windowCase = fc.record({
  images: fc.integer({ min: 1, max: 2 }),
  height: fc.integer({ min: 2, max: 6 }),
  width: fc.integer({ min: 2, max: 6 }),
  channels: fc.integer({ min: 1, max: 3 }),
  features: fc.integer({ min: 1, max: 3 }),
  kernel: fc.integer({ min: 1, max: 2 }),
  stride: fc.integer({ min: 1, max: 3 }),
  padding: fc.constantFrom("same" as const, "valid" as const),
  pool: fc.integer({ min: 1, max: 2 }),
  poolStride: fc.integer({ min: 1, max: 2 }),
  clients: fc.integer({ min: 1, max: 3 }),
  seed: fc.nat(1000),
});
type WindowCase = typeof windowCase extends fc.Arbitrary<infer T> ? T : never;

/**
 * conv2d then max_pool, both with the case's windows, and the gradient of the summed squares
 * with respect to the images and the filter: at the server, and per client with the filter
 * broadcast (the client axis folds into the images). Then the derivatives of the window ops'
 * own gradients: a second-order gradient (grad of the squared norm of the filter gradient)
 * and forward mode, of the forward pass and of the gradient (forward over reverse).
 */
function windowProgram(c: WindowCase): GeneratedProgram {
  const imageShape = [c.images, c.height, c.width, c.channels];
  const filterShape = [c.kernel, c.kernel, c.channels, c.features];
  const conv = { strides: c.stride, padding: c.padding };
  const pool = { strides: c.poolStride, padding: c.padding };
  const forward = (x: unknown, f: unknown) => op.maxPool2d!(op.conv2d!(x, f, conv), c.pool, pool);
  const loss = (x: unknown, f: unknown) => op.sum!(op.mul!(forward(x, f), forward(x, f)));
  const specs = {
    x: ft.atServer(ft.f32(imageShape as never)),
    f: ft.atServer(ft.f32(filterShape as never)),
    cx: ft.atClients(ft.f32(imageShape as never)),
    tx: ft.atServer(ft.f32(imageShape as never)),
    tf: ft.atServer(ft.f32(filterShape as never)),
  };
  const gradient = (x: unknown, f: unknown) => op.grad!(([q, g]: unknown[]) => loss(q, g))([x, f]) as unknown[];
  const program = ft.program(specs as never, ({ x, f, cx, tx, tf }: Record<string, unknown>) => {
    const [dx, df] = gradient(x, f);
    const perClient = op.map!((xm: unknown, fm: unknown) => forward(xm, fm), cx, op.broadcast!(f));
    const dfClients = op.grad!((g: unknown) => op.reduceSum!(op.map!((xm: unknown, fm: unknown) => loss(xm, fm), cx, op.broadcast!(g))))(f);
    const secondOrder = op.grad!(([q, g]: unknown[]) => {
      const [, dg] = gradient(q, g);
      return op.sum!(op.mul!(dg, dg));
    })([x, f]);
    const [, forwardTangent] = op.jvp!(forward, [x, f], [tx, tf]);
    const [, gradientTangent] = op.jvp!(gradient, [x, f], [tx, tf]);
    return { pooled: forward(x, f), dx, df, perClient, dfClients, secondOrder, forwardTangent, gradientTangent };
  }) as ft.Program<unknown, unknown>;
  const code = `conv2d(${JSON.stringify(imageShape)} * ${JSON.stringify(filterShape)}, ${JSON.stringify(conv)}) then maxPool2d(${c.pool}, ${JSON.stringify(pool)}), their gradients, per client, second order and jvp`;
  const inputs: InputTree = {
    x: data(imageShape, c.seed),
    f: data(filterShape, c.seed + 1),
    cx: data([c.clients, ...imageShape], c.seed + 2),
    tx: data(imageShape, c.seed + 3),
    tf: data(filterShape, c.seed + 4),
  };
  return { program, code, inputs, clients: c.clients };
}

/** Valid windows must fit the image; others are a typing error, not a case. */
const fits = (c: WindowCase) =>
  c.padding === "same" || (c.kernel <= c.height && c.kernel <= c.width && c.pool <= Math.floor((c.height - c.kernel) / c.stride) + 1 && c.pool <= Math.floor((c.width - c.kernel) / c.stride) + 1);

const windowsAgree = (backends: readonly Backend[], seed: number) => async () => {
  await fc.assert(
    fc.asyncProperty(windowCase.filter(fits), async (c) => {
      await checkAgreement(windowProgram(c), backends);
    }),
    propertySettings(seed, 60),
  );
};

test("convolution, pooling and their gradients agree on cpu, wasm, onnx and the reference interpreter", windowsAgree(["cpu", "wasm", "onnx"], 4242), deadline(120_000));

test.skipIf(!webgpu.available)(`convolution, pooling and their gradients agree on webgpu and the reference interpreter (${webgpu.detail})`, windowsAgree(["webgpu"], 2424), deadline(120_000));

const optionalBackends: Backend[] = webgpu.available ? ["webgpu"] : [];

test(`integer and boolean operations agree on cpu, wasm, onnx${webgpu.available ? ", webgpu" : ""} and the reference interpreter`, async () => {
  const specs = { a: ft.atServer(ft.i32([2, 3])), b: ft.atServer(ft.i32([3, 2])), labels: ft.atClients(ft.i32([3])), x: ft.atServer(ft.f32([2, 3])) };
  const program = ft.program(specs as never, ({ a, b, labels, x }: Record<string, unknown>) => {
    const positive = op.greater!(a, 0);
    return {
      arithmetic: [op.neg!(a), op.abs!(a), op.sign!(a), op.relu!(a), op.maximum!(a, 1), op.minimum!(a, 1), op.sub!(op.mul!(a, a), a)],
      comparisons: [op.less!(a, 0), op.lessEqual!(a, 0), op.equal!(a, 0), op.notEqual!(a, 0)],
      logic: [op.logicalAnd!(positive, op.less!(a, 2)), op.logicalOr!(positive, op.equal!(a, -1)), op.logicalNot!(positive), op.where!(positive, op.equal!(a, 1), op.less!(a, -1))],
      reductions: [op.sum!(a), op.max!(a, 1), op.min!(a, 0), op.argmax!(a), op.argmax!(x, 0)],
      products: op.matmul!(a, b),
      // -1 and 4 are outside [0, 4): rows of zeros, not counted from the end.
      oneHot: op.map!((l: unknown) => op.oneHot!(l, 4), labels),
      casts: [op.cast!(x, "int32"), op.cast!(a, "float32"), op.cast!(positive, "float32"), op.cast!(x, "bool")],
    };
  }) as ft.Program<unknown, unknown>;
  const inputs: InputTree = {
    a: { shape: [2, 3], data: [-2, 0, 3, 1, -1, 2] },
    b: { shape: [3, 2], data: [1, -1, 2, 0, -3, 4] },
    labels: { shape: [2, 3], data: [0, 3, -1, 4, 2, 1] },
    x: { shape: [2, 3], data: [-1.5, 0.75, 2.25, 0, -0.5, 3] },
  };
  await checkAgreement({ program, code: "integer and boolean operations (see the test)", inputs, clients: 2 }, ["cpu", "wasm", "onnx", ...optionalBackends]);
});
