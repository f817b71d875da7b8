/**
 * The derivatives of the window ops' own gradients (conv2d_grad_input, conv2d_grad_filter,
 * max_pool_grad) and forward mode through conv2d and max_pool, checked against central
 * finite differences in float64 on the reference interpreter. The differential tests compare
 * the optimised path with the interpreter on the same derivative IR; this checks that IR.
 * The data are generic (no ties in a pooling window), so every function here is smooth near it.
 */
import { describe, expect, test } from "vitest";
import * as ft from "../../src/index.js";
import { interpret, type InputTree, type OutputLeaf } from "../../src/interpret/reference.js";

const op = ft as unknown as Record<string, (...args: any[]) => any>;

interface WindowSetting {
  readonly name: string;
  readonly image: readonly number[];
  readonly filter: readonly number[];
  readonly conv: { strides: number; padding: "same" | "valid" };
  readonly pool: { size: number; strides: number; padding: "same" | "valid" };
}

const settings: readonly WindowSetting[] = [
  { name: "SAME, stride 1, 2x2 pool", image: [1, 4, 4, 2], filter: [2, 2, 2, 2], conv: { strides: 1, padding: "same" }, pool: { size: 2, strides: 2, padding: "same" } },
  { name: "VALID, stride 2, overlapping pool", image: [2, 5, 5, 1], filter: [2, 2, 1, 3], conv: { strides: 2, padding: "valid" }, pool: { size: 2, strides: 1, padding: "valid" } },
];

/** Generic values in (-1, 1), different per seed and entry: no two entries of a window tie. */
const generic = (shape: readonly number[], seed: number): { shape: number[]; data: number[] } => {
  const size = shape.reduce((n, d) => n * d, 1);
  return { shape: [...shape], data: Array.from({ length: size }, (_, i) => Math.sin(1.7 * i + 3.1 * seed + 0.3) * 0.9) };
};

const STEP = 1e-5;

/** The program's outputs as a list of tensors (one output is a list of one). */
function run(p: ft.Program<unknown, unknown>, inputs: InputTree): OutputLeaf[] {
  const out = interpret(p.ir, inputs);
  return Array.isArray(out) ? (out as OutputLeaf[]) : [out as OutputLeaf];
}

/** x + s * t, entrywise, for host tensors of one shape. */
const along = (x: { shape: number[]; data: number[] }, t: { data: number[] }, s: number) => ({ shape: x.shape, data: x.data.map((v, i) => v + s * t.data[i]!) });

function expectClose(got: ArrayLike<number>, want: readonly number[], what: string): void {
  const scale = Math.max(1, ...want.map(Math.abs));
  expect(got.length, what).toBe(want.length);
  want.forEach((w, i) => expect(Math.abs(got[i]! - w), `${what} entry ${i}: ${got[i]} vs ${w}`).toBeLessThan(1e-6 * scale));
}

describe.each(settings)("window derivatives, $name", (s) => {
  const specs = { x: ft.atServer(ft.f32(s.image as never)), f: ft.atServer(ft.f32(s.filter as never)), tx: ft.atServer(ft.f32(s.image as never)), tf: ft.atServer(ft.f32(s.filter as never)) };
  const forward = (x: unknown, f: unknown) => op.maxPool2d!(op.conv2d!(x, f, s.conv), s.pool.size, { strides: s.pool.strides, padding: s.pool.padding });
  const loss = (x: unknown, f: unknown) => op.sum!(op.mul!(forward(x, f), forward(x, f)));
  const gradient = (x: unknown, f: unknown) => op.grad!(([q, g]: unknown[]) => loss(q, g))([x, f]) as unknown[];
  /** The squared norm of the gradient: its gradient needs the derivatives of the window ops' gradients. */
  const gradientNorm = (x: unknown, f: unknown) => {
    const [dx, df] = gradient(x, f);
    return op.add!(op.sum!(op.mul!(dx, dx)), op.sum!(op.mul!(df, df)));
  };
  const inputs = { x: generic(s.image, 1), f: generic(s.filter, 2), tx: generic(s.image, 3), tf: generic(s.filter, 4) };
  /** Central difference along (tx, tf) of a program of x and f. */
  const directional = (p: ft.Program<unknown, unknown>): number[][] => {
    const plus = run(p, { ...inputs, x: along(inputs.x, inputs.tx, STEP), f: along(inputs.f, inputs.tf, STEP) });
    const minus = run(p, { ...inputs, x: along(inputs.x, inputs.tx, -STEP), f: along(inputs.f, inputs.tf, -STEP) });
    return plus.map((leaf, k) => Array.from(leaf.data, (v, i) => (v - minus[k]!.data[i]!) / (2 * STEP)));
  };

  test("jvp of conv2d then max_pool is the directional derivative", () => {
    const tangent = ft.program(specs as never, ({ x, f, tx, tf }: Record<string, unknown>) => op.jvp!(forward, [x, f], [tx, tf])[1]) as ft.Program<unknown, unknown>;
    const value = ft.program(specs as never, ({ x, f }: Record<string, unknown>) => forward(x, f)) as ft.Program<unknown, unknown>;
    expectClose(run(tangent, inputs)[0]!.data, directional(value)[0]!, "tangent");
  });

  test("jvp of the gradient (through conv2d_grad_input, conv2d_grad_filter, max_pool_grad) is its directional derivative", () => {
    const tangent = ft.program(specs as never, ({ x, f, tx, tf }: Record<string, unknown>) => op.jvp!(gradient, [x, f], [tx, tf])[1]) as ft.Program<unknown, unknown>;
    const value = ft.program(specs as never, ({ x, f }: Record<string, unknown>) => gradient(x, f)) as ft.Program<unknown, unknown>;
    const [dxTangent, dfTangent] = run(tangent, inputs);
    const [dxWant, dfWant] = directional(value);
    expectClose(dxTangent!.data, dxWant!, "d(dx)");
    expectClose(dfTangent!.data, dfWant!, "d(df)");
  });

  test("grad of the gradient's squared norm (second order) agrees with the directional derivative", () => {
    // <grad h, (tx, tf)> must equal d/ds h(x + s tx, f + s tf): one check covers every entry's weight.
    const second = ft.program(specs as never, ({ x, f }: Record<string, unknown>) => op.grad!(([q, g]: unknown[]) => gradientNorm(q, g))([x, f])) as ft.Program<unknown, unknown>;
    const norm = ft.program(specs as never, ({ x, f }: Record<string, unknown>) => gradientNorm(x, f)) as ft.Program<unknown, unknown>;
    const [gx, gf] = run(second, inputs);
    const dot = (g: OutputLeaf, t: { data: number[] }) => Array.from(g.data).reduce((acc, v, i) => acc + v * t.data[i]!, 0);
    expectClose([dot(gx!, inputs.tx) + dot(gf!, inputs.tf)], directional(norm)[0]!, "second order");
  });
});
