/**
 * The reference interpreter on federated programs: DrJAX's test cases, map, scan inside map,
 * and aggregate's grouping.
 */
import { describe, expect, test } from "vitest";
import {
  aggregate,
  atClients,
  atServer,
  broadcast,
  cast,
  f32,
  fori,
  grad,
  i32,
  map,
  matmul,
  mean,
  mul,
  program,
  reduceMax,
  reduceMean,
  reduceMin,
  reduceSum,
  reduceWeightedMean,
  scan,
  sub,
  add,
  sum,
  type Tensor,
} from "../../src/index.js";
import { expectClose, plain, primitiveProgram, run, runLeaf, runRecord } from "./helpers.js";

describe("DrJAX cases", () => {
  test("broadcast of a SERVER vector to 3 clients", () => {
    const p = program({ v: atServer(f32([2])) }, ({ v }) => broadcast(v));
    expect(plain(run(p, { v: [-1, 1] }, { clients: 3 }))).toEqual({ shape: [3, 2], data: [-1, 1, -1, 1, -1, 1] });
  });

  test("reduceSum(broadcast(2)) over 3 clients is 6", () => {
    const p = program({ s: atServer(f32([])) }, ({ s }) => reduceSum(broadcast(s)));
    expect(plain(run(p, { s: 2 }, { clients: 3 }))).toEqual({ shape: [], data: [6] });
  });

  describe("model [2,-1] and client data [[1,2],[3,-4],[-7,6]]", () => {
    const perClientLoss = (model: Tensor<[2], "float32", "clients-equal">, data: Tensor<[2], "float32", "clients">) =>
      map(
        (m, x) => {
          const residual = sub(matmul(m, x), 1);
          return mul(mul(residual, residual), 0.5);
        },
        model,
        data,
      );
    const specs = { model: atServer(f32([2])), data: atClients(f32([2])) };
    const inputs = { model: [2, -1], data: [[1, 2], [3, -4], [-7, 6]] };

    test("the mean over clients of 0.5*(x.y-1)^2 is 87.16667", () => {
      const p = program(specs, ({ model, data }) => {
        const losses = perClientLoss(broadcast(model), data);
        return { loss: reduceMean(losses), losses };
      });
      const out = runRecord(p, inputs);
      // x.y per client: 0, 10, -20, so the losses are 0.5, 40.5 and 220.5.
      expect(plain(out.losses)).toEqual({ shape: [3], data: [0.5, 40.5, 220.5] });
      expectClose(plain(out.loss).data, [261.5 / 3]);
      expect(plain(out.loss).data[0]).toBeCloseTo(87.16667, 5);
    });

    test("its gradient at the SERVER is the mean of (x.y-1) x", () => {
      const p = program(specs, ({ model, data }) => grad((m: typeof model) => reduceMean(perClientLoss(broadcast(m), data)))(model));
      // (-1*[1,2] + 9*[3,-4] - 21*[-7,6]) / 3
      expectClose(plain(run(p, inputs)).data, [173 / 3, -164 / 3]);
    });
  });
});

describe("map and the reductions over clients", () => {
  const p = program({ w: atServer(f32([2])), x: atClients(f32(["B", 2])) }, ({ w, x }) => {
    const perClient = map((wm, xm) => mean(matmul(xm, wm)), broadcast(w), x);
    return { perClient, mean: reduceMean(perClient), max: reduceMax(perClient), min: reduceMin(perClient), total: reduceSum(perClient) };
  });

  test("map runs per client and the reductions combine the members", () => {
    const out = runRecord(p, { w: [1, 2], x: [[[1, 2], [3, 4]], [[0, 1], [1, 0]], [[-1, 0], [0, -1]]] });
    // Client means of x @ w: (5 + 11)/2 = 8, (2 + 1)/2 = 1.5, (-1 - 2)/2 = -1.5.
    expect(plain(out.perClient)).toEqual({ shape: [3], data: [8, 1.5, -1.5] });
    expect(plain(out.mean).data).toEqual([8 / 3]);
    expect(plain(out.max).data).toEqual([8]);
    expect(plain(out.min).data).toEqual([-1.5]);
    expect(plain(out.total).data).toEqual([8]);
  });

  test("reduceWeightedMean weights each client", () => {
    const q = program({ x: atClients(f32([])), n: atClients(f32([])) }, ({ x, n }) => reduceWeightedMean(x, n));
    // (1*1 + 3*3) / (1 + 3)
    expect(plain(run(q, { x: [1, 3], n: [1, 3] })).data).toEqual([2.5]);
  });

  test("client_count gives the cohort size", () => {
    expect(plain(run(primitiveProgram("client_count", {}), {}, { clients: 4 }))).toEqual({ shape: [], data: [4] });
  });
});

describe("scan inside map: local SGD on a linear model", () => {
  const p = program(
    { w: atServer(f32([2])), x: atClients(f32(["B", 2])), y: atClients(f32(["B"])) },
    ({ w, x, y }) => {
      const [trained, errors] = map(
        (wm, xm, ym) =>
          scan(wm, { xt: xm, yt: ym }, (wt, { xt, yt }) => {
            const error = sub(matmul(wt, xt), yt);
            return [sub(wt, mul(xt, mul(error, 0.5))), error] as const;
          }),
        broadcast(w),
        x,
        y,
      );
      return { model: reduceMean(trained), errors };
    },
  );

  test("each client trains from the broadcast model, one example per step", () => {
    const out = runRecord(p, { w: [0, 0], x: [[[1, 0], [0, 1]], [[1, 1], [2, 0]]], y: [[2, 4], [2, 2]] });
    // Client 0: errors -2 then -4, w goes [1,0] then [1,2]. Client 1: error -2 gives [1,1]; then 2-2 = 0.
    expect(plain(out.errors)).toEqual({ shape: [2, 2], data: [-2, -4, -2, 0] });
    expect(plain(out.model)).toEqual({ shape: [2], data: [1, 1.5] });
  });

  test("with no examples the model stays and the stacked errors are empty", () => {
    const out = runRecord(p, { w: [3, 4], x: { shape: [2, 0, 2], data: [] }, y: { shape: [2, 0], data: [] } });
    expect(plain(out.errors)).toEqual({ shape: [2, 0], data: [] });
    expect(plain(out.model)).toEqual({ shape: [2], data: [3, 4] });
  });

  test("a scan over CLIENTS values steps through every member", () => {
    const q = program({ x: atClients(f32([3])) }, ({ x }) => {
      const [total, prefix] = scan(mul(sum(x), 0), x, (acc, xt) => [add(acc, xt), acc] as const);
      return { total, prefix };
    });
    const out = runRecord(q, { x: [[1, 2, 3], [10, 20, 30]] });
    expect(plain(out.total)).toEqual({ shape: [2], data: [6, 60] });
    expect(plain(out.prefix)).toEqual({ shape: [2, 3], data: [0, 1, 3, 0, 10, 30] });
  });

  test("fori counts its index through iota", () => {
    const q = program({ s: atServer(f32([])), k: atServer(i32([])) }, ({ s, k }) => ({
      total: fori(4, s, (i, acc) => add(acc, cast(i, "float32"))),
      indices: fori(3, k, (i, acc) => add(mul(acc, 10), i)),
    }));
    const out = runRecord(q, { s: 0.5, k: 7 });
    expect(plain(out.total).data).toEqual([6.5]);
    expect(plain(out.indices)).toEqual({ shape: [], data: [7012] });
  });
});

describe("aggregate", () => {
  // accumulate and merge do not commute, so the result spells out the grouping.
  const p = program({ x: atClients(f32([])), ten: f32([]) }, ({ x, ten }) =>
    aggregate(x, {
      zero: () => mul(ten, 0),
      accumulate: (acc, xm) => add(mul(acc, ten), xm),
      merge: (a, b) => add(mul(a, mul(ten, ten)), b),
      report: (acc) => ({ value: acc, tenth: mul(acc, 0.1) }),
    }),
  );

  test("groups are the first ceil(C/2) clients and the rest, each folded in client order", () => {
    const out = runRecord(p, { x: [1, 2, 3, 4, 5], ten: 10 });
    // Groups [1,2,3] -> 123 and [4,5] -> 45; merge 123*100 + 45.
    expect(plain(out.value)).toEqual({ shape: [], data: [12345] });
    expectClose(plain(out.tenth).data, [1234.5]);
  });

  test("with one client the second group is empty and keeps the zero", () => {
    const out = runRecord(p, { x: [7], ten: 10 });
    expect(plain(out.value).data).toEqual([700]);
  });

  test("an even cohort splits in halves", () => {
    const out = runRecord(p, { x: [1, 2, 3, 4], ten: 10 });
    expect(plain(out.value).data).toEqual([1234]);
  });

  test("vector members, and a merge that subtracts the second group", () => {
    const q = program({ x: atClients(f32([2])), zero: f32([]) }, ({ x, zero }) =>
      aggregate(x, {
        zero: () => zero,
        accumulate: (acc, xm) => add(acc, sum(xm)),
        merge: (a, b) => sub(a, b),
        report: (acc) => acc,
      }),
    );
    // Groups [1,2],[3,4] (sum 10) and [5,6] (sum 11).
    expect(runLeaf(q, { x: [[1, 2], [3, 4], [5, 6]], zero: 0 }).data[0]).toBe(-1);
  });
});
