/**
 * localZeros: local zeros shaped like a value or a tree, the carry of a scan written without its
 * shape; read from the static type alone, so zeros shaped like private data are not private.
 */
import { describe, expect, test } from "vitest";
import { add, atClients, atServer, f32, i32, localZeros, map, program, reduceSum, scan, sum } from "../../src/index.js";

const read = async (t: { data(): Promise<ArrayLike<number>>; dispose(): void }) => {
  const values = Array.from(await t.data());
  t.dispose();
  return values;
};

describe("localZeros", () => {
  test("is the zero carry of a scan inside map: each client's running sum of its rows", async () => {
    const totals = program({ x: atClients(f32([3, 2])) }, ({ x }) =>
      reduceSum(map((xm) => scan(localZeros(sum(xm, 0)), xm, (carry, row) => [add(carry, row), carry] as const)[0], x)),
    );
    const out = await totals.run({ x: [[[1, 2], [3, 4], [5, 6]], [[1, 1], [1, 1], [1, 1]]] });
    expect(await read(out)).toEqual([12, 15]);
  });

  test("keeps each leaf's shape and dtype in a tree, with no placement", () => {
    program({ w: atServer(f32([2, 3])), n: atServer(i32([4])) }, ({ w, n }) => {
      const zeros = localZeros({ w, inner: [n] });
      expect(zeros.w.shape).toEqual([2, 3]);
      expect(zeros.w.dtype).toBe("float32");
      expect(zeros.inner[0]!.dtype).toBe("int32");
      expect(zeros.w.placement).toBe("local");
      return w;
    });
  });

  test("zeros shaped like private data are not private: they reach the SERVER without a release", async () => {
    const counted = program({ x: atClients(f32(["N"]), { private: true }) }, ({ x }) => reduceSum(map((xm) => add(sum(localZeros(xm)), 1), x)));
    expect(await read(await counted.run({ x: [[5, 6], [7, 8], [9, 1]] }))).toEqual([3]);
  });

  test("a dim known only at run time has no size to fill: FT302", () => {
    expect(() => program({ x: atServer(f32([null, 2])) }, ({ x }) => add(x, sum(localZeros(x))))).toThrow(/FT302: .*localZeros\(\) value .*known only at run time/);
  });
});
