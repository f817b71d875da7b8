import * as tf from "@tensorflow/tfjs";
import { describe, expect, test } from "vitest";
import { atClients, atServer, broadcast, f32, map, mul, program, reduceMean, reduceSum, sub, sum, valueAndGrad } from "../../src/index.js";

const values = async (t: tf.Tensor) => Array.from(await t.data());

describe("DrJAX's examples on the optimised path (wasm)", () => {
  test("broadcast([-1,1]) over 3 clients", async () => {
    const p = program({ x: atServer(f32([2])) }, ({ x }) => broadcast(x));
    const out = await p.run({ x: [-1, 1] }, { clients: 3 });
    expect(out.shape).toEqual([3, 2]);
    expect(await out.array()).toEqual([[-1, 1], [-1, 1], [-1, 1]]);
    out.dispose();
  });

  test("reduceSum(broadcast(2)) is 6 with derivative 3", async () => {
    const p = program({ x: atServer(f32([])) }, ({ x }) => {
      const [value, slope] = valueAndGrad((v: typeof x) => reduceSum(broadcast(v)))(x);
      return { value, slope };
    });
    const out = await p.run({ x: 2 }, { clients: 3 });
    expect(await values(out.value)).toEqual([6]);
    expect(await values(out.slope)).toEqual([3]);
    tf.dispose([out.value, out.slope]);
  });

  test("linear model: loss, gradient and one SGD step", async () => {
    const p = program({ w: atServer(f32([2])), x: atClients(f32([2])) }, ({ w, x }) => {
      const loss = (m: typeof w) =>
        reduceMean(
          map((wm, xm) => {
            const r = sub(sum(mul(wm, xm)), 1);
            return mul(mul(r, r), 0.5);
          }, broadcast(m), x),
        );
      const [value, g] = valueAndGrad(loss)(w);
      const stepped = sub(w, mul(g, 0.01));
      return { value, g, after: loss(stepped) };
    });
    const out = await p.run({ w: [2, -1], x: [[1, 2], [3, -4], [-7, 6]] });
    expect((await values(out.value))[0]).toBeCloseTo(87.16667, 4);
    const g = await values(out.g);
    expect(g[0]).toBeCloseTo(57.666668, 4);
    expect(g[1]).toBeCloseTo(-54.666668, 4);
    expect((await values(out.after))[0]).toBeCloseTo(35.551258, 4);
    tf.dispose([out.value, out.g, out.after]);
  });
});
