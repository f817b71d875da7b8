/**
 * Loops: fori(n, init, body) returns the carry, scan(init, xs, body) the final carry and the
 * stacked per-step outputs. The carry keeps its tree structure, shapes, dtypes and placement
 * from one step to the next (FT208).
 */
import { expectError, expectType } from "tsd";
import {
  add,
  broadcast,
  cast,
  concat,
  fori,
  map,
  matmul,
  mean,
  mul,
  scan,
  sub,
  sum,
  tanh,
  type LoopIndex,
} from "../dist/src/index.js";
import { value, type F32, type I32 } from "./helpers.js";

type Params = { w: F32<[784, 10], "server">; b: F32<[10], "server"> };
declare const params: Params;
declare const images: F32<["B", 784], "clients">;
declare const state: F32<["B", 16]>;
declare const sequence: F32<["T", "B", 16]>;
declare const steps: I32<["T"]>;

// ---- fori ---------------------------------------------------------------------------------

expectType<Params>(fori(10, params, (i, p) => mul(p, 0.9)));
expectType<F32<["B", 16]>>(
  fori(3, state, (i, h) => {
    expectType<LoopIndex>(i);
    return add(h, cast(i, "float32"));
  }),
);
// Local training: the loop runs inside map on each client's members.
expectType<F32<[784, 10], "clients">>(
  map((w, x) => fori(5, w, (i, v) => sub(v, mul(mean(x), 0.01))), broadcast(params.w), images),
);
// A loop body that changes the carry's shape, dtype, placement or tree.
expectError(fori(3, state, (i, h) => sum(h, 0)));
expectError(fori(3, state, (i, h) => cast(h, "int32")));
expectError(fori(3, params.w, (i, w) => broadcast(w)));
expectError(fori(3, params, (i, p) => ({ w: p.w })));
expectError(fori(3, { step: value<I32<[]>>(), h: state }, (i, c) => ({ step: cast(add(c.step, 1), "float32"), h: c.h })));

// ---- scan ---------------------------------------------------------------------------------

// A recurrent cell: the final state and the per-step outputs, stacked along T.
expectType<[F32<["B", 16]>, F32<["T", "B"]>]>(scan(state, sequence, (h, x) => [tanh(add(h, x)), sum(h, -1)] as const));
// Without per-step outputs.
expectType<[F32<["B", 16]>, undefined]>(scan(state, sequence, (h, x) => [add(h, x), undefined] as const));
// xs may be a tree; every leaf is stepped along its leading dim.
expectType<[F32<["B", 16]>, I32<["T"]>]>(
  scan(state, { x: sequence, t: steps }, (h, step) => [add(h, step.x), step.t] as const),
);
expectType<[F32<["B", 16]>, { out: F32<["T", "B", 16]> }]>(
  scan(state, sequence, (h, x) => [h, { out: matmul(x, value<F32<[16, 16]>>()) }] as const),
);
expectError(scan(state, sequence, (h, x) => [concat([h, x], 1), sum(h, -1)] as const));
expectError(scan(state, sequence, (h, x) => [sum(h, 1), undefined] as const));
expectError(scan({ h: state, n: value<I32<[]>>() }, sequence, (c, x) => [{ h: add(c.h, x) }, undefined] as const));

// A plain number as the first carry: FT302 on it, and nothing after it.
expectError(scan(0, sequence, (c, x) => [add(c, sum(x)), x] as const));
