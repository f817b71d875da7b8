import * as tf from "@tensorflow/tfjs";
import { describe, expect, test } from "vitest";
import { add, atClients, constant, f32, FedTensorError, full, greater, map, mul, ones, program, reduceMean, sum, where, zeros } from "../../src/index.js";

const values = async (t: tf.Tensor) => {
  const out = Array.from(await t.data());
  t.dispose();
  return out;
};

describe("local constants", () => {
  test("constant, zeros, ones and full combine with values at any placement", async () => {
    const p = program({ x: atClients(f32(["B", 2])) }, ({ x }) => ({
      weighted: reduceMean(map((v) => sum(mul(v, constant([1, -1]))), x)),
      padded: reduceMean(map((v) => sum(add(add(v, zeros(["B", 2])), full([2], 0.5))), x)),
      counted: reduceMean(map((v) => sum(mul(ones(["B"]), 2)), x)),
    }));
    const out = await p.run({ x: [[[1, 2], [3, 5]], [[0, 4], [1, 1]]] });
    // client 1: (1-2)+(3-5) = -3; client 2: (0-4)+(1-1) = -4
    expect(await values(out.weighted)).toEqual([-3.5]);
    // client 1: 11 + 4*0.5 = 13; client 2: 6 + 2 = 8
    expect(await values(out.padded)).toEqual([10.5]);
    // B = 2 rows of 2
    expect(await values(out.counted)).toEqual([4]);
  });

  test("bad constants are FT302 and a bad dtype FT305", () => {
    const thrown = (f: () => unknown) => {
      try {
        f();
      } catch (error) {
        return error as FedTensorError;
      }
      throw new Error("no error");
    };
    const inside = (f: () => unknown) => () => program({ x: f32([]) }, () => f() as never);
    expect(thrown(inside(() => constant([[1, 2], [3]] as never))).message).toBe("FT302: constant() value: nested arrays of different lengths");
    expect(thrown(inside(() => constant(Number.NaN))).message).toBe("FT302: constant() value: NaN is not a finite number");
    expect(thrown(inside(() => zeros([2, -1]))).message).toBe("FT302: zeros() shape: dims are sizes >= 0 or names, got -1");
    expect(thrown(inside(() => ones([2], "float64" as never))).code).toBe("FT305");
  });
});

describe("where() with numbers", () => {
  test("a number branch takes the other branch's dtype", async () => {
    const relu = program({ x: atClients(f32([3])) }, ({ x }) => reduceMean(map((v) => sum(where(greater(v, 0), v, 0)), x)));
    expect(await values(await relu.run({ x: [[1, -2, 3], [-1, -1, 5]] }))).toEqual([4.5]);
    const cap = program({ x: f32([3]) }, ({ x }) => where(greater(x, 0), 1, x));
    expect(await values(await cap.run({ x: [1, -2, 3] }))).toEqual([1, -2, 1]);
  });
});
