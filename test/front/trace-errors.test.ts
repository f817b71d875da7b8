/**
 * FT108: an operation used outside the trace it belongs to (SPEC: operations record a program;
 * they compute nothing when called). And stopGradient's derivative, which is zero: a value
 * passed through it is a constant to grad().
 */
import { describe, expect, test } from "vitest";
import { FedTensorError, atServer, exp, f32, grad, mul, program, stopGradient, sum, type Tensor } from "../../src/index.js";

function ft108(work: () => unknown): string {
  try {
    work();
  } catch (error) {
    expect(error).toBeInstanceOf(FedTensorError);
    expect((error as FedTensorError).code).toBe("FT108");
    return (error as Error).message;
  }
  throw new Error("expected FT108");
}

const inputs = { w: atServer(f32([3])) };
type W = Tensor<[3], "float32", "server">;

describe("FT108: operations outside their trace", () => {
  test("a value kept after its program's function returned, used outside any program or in another", () => {
    let leaked: W | undefined;
    program(inputs, ({ w }) => {
      leaked = w;
      return w;
    });
    expect(ft108(() => exp(leaked!))).toBe("FT108: exp() was called outside program(...): operations record a program and run through program.run()");
    expect(ft108(() => program(inputs, ({ w }) => mul(w, leaked!)))).toBe("FT108: mul() got a value traced in another program");
  });

  test("a value leaked out of grad()'s function, used after grad() returned", () => {
    let inner: W | undefined;
    const leak = (v: W) => {
      inner = v;
      return sum(v);
    };
    expect(ft108(() => program(inputs, ({ w }) => (grad(leak)(w), mul(inner!, 2))))).toBe("FT108: mul() got a value traced in another program");
  });
});

describe("stopGradient", () => {
  test("its derivative is zero: d/dw sum(stop(w) * w) = w, not 2w; d/dw sum(stop(w)) = 0", async () => {
    const run = async (loss: (w: W) => Tensor<[], "float32", "server">) => {
      const p = program(inputs, ({ w }) => grad(loss)(w));
      const out = (await p.run({ w: { shape: [3], data: Float32Array.of(1, -2, 3) } })) as { data(): Promise<Float32Array> };
      return Array.from(await out.data());
    };
    expect(await run((w) => sum(mul(stopGradient(w), w)))).toEqual([1, -2, 3]);
    expect(await run((w) => sum(mul(w, w)))).toEqual([2, -4, 6]);
    expect(await run((w) => sum(stopGradient(w)))).toEqual([0, 0, 0]);
  });
});
