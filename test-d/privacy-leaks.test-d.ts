/**
 * The leak classes of issue 19: operations whose result type used to copy one operand's type
 * instead of joining every operand's placement (types/placement.ts Tainted). Each leak is an
 * error, each result is as private as its most private operand, and correct private code
 * passes. test/privacy/taint-matrix.test.ts checks every exported operation and operand; the
 * texts are in test/fixtures/type-errors/ft109-every-operand.ts.
 */
import { expectError, expectType } from "tsd";
import {
  broadcast,
  clientIndex,
  clipByNorm,
  dpSum,
  dropout,
  foldIn,
  grad,
  groupNorm,
  jvp,
  layerNorm,
  map,
  matmul,
  mean,
  mul,
  reduceMean,
  reduceSum,
  scan,
  split,
  stochasticQuantize,
  sub,
  sum,
  uniform,
  valueAndGrad,
  zeroAboveNorm,
  type Tensor,
} from "../dist/src/index.js";
import type { ReleasedServer } from "../dist/src/index.js";
import type { F32, I32 } from "./helpers.js";

declare const x: F32<["N", 3], "clients">;
declare const scale: F32<[3], "clients">;
declare const secret: F32<["N", 3], "clients-private">;
declare const secretScale: F32<[3], "clients-private">;
declare const secretBound: F32<[], "clients-private">;
declare const secretKey: I32<[2], "clients-private">;
declare const clientKey: I32<[2], "clients">;
declare const weights: F32<[3], "server">;
declare const features: F32<[3, 4], "server">;
declare const key: I32<[2], "server">;

// ---- layerNorm / groupNorm: gamma and beta ----------------------------------------------------

expectType<F32<["N", 3], "clients-private">>(layerNorm(x, scale, secretScale));
expectType<F32<["N", 3], "clients-private">>(layerNorm(x, secretScale, scale));
expectType<F32<["N", 3], "clients-private">>(groupNorm(x, scale, secretScale, 3));
expectError(reduceSum(layerNorm(x, scale, secretScale)));
expectError(reduceSum(groupNorm(x, scale, secretScale, 3)));
expectType<F32<["N", 3], "server">>(reduceSum(layerNorm(x, scale, scale)));

// ---- clipByNorm's bound, zeroAboveNorm's threshold, and the other leaves of the tree -------------

expectType<F32<["N", 3], "clients-private">>(clipByNorm(x, secretBound));
expectType<F32<["N", 3], "clients-private">>(zeroAboveNorm(x, secretBound));
expectType<{ open: F32<["N", 3], "clients-private">; hidden: F32<["N", 3], "clients-private"> }>(clipByNorm({ open: x, hidden: secret }, 1));
expectError(reduceSum(clipByNorm(x, secretBound)));
expectError(reduceSum(zeroAboveNorm(x, secretBound)));
expectError(reduceMean(clipByNorm({ open: x, hidden: secret }, 1).open));
expectType<F32<["N", 3], "clients">>(clipByNorm(x, 1));
expectType<F32<["N", 3], "clients">>(zeroAboveNorm(x, mean(scale)));

// ---- keys derived from private data: dropout, stochasticQuantize, draws --------------------------

expectType<F32<["N", 3], "clients-private">>(dropout(x, 0.5, secretKey));
expectType<F32<["N", 3], "clients-private">>(stochasticQuantize(x, secretKey, { bits: 4 }));
expectType<F32<[3], "clients-private">>(uniform(split(secretKey)[0], [3]));
expectError(reduceSum(dropout(x, 0.5, secretKey)));
expectError(reduceSum(stochasticQuantize(x, secretKey, { bits: 4 })));
expectType<F32<["N", 3], "clients">>(dropout(x, 0.5, clientKey));

// ---- jvp's tangents ---------------------------------------------------------------------------------

expectType<F32<["N", 3], "clients-private">>(jvp((v: typeof x) => mul(v, v), [x], [secret])[1]);
expectType<F32<["N", 3], "clients">>(jvp((v: typeof x) => mul(v, v), [x], [secret])[0]);
expectError(reduceSum(jvp((v: typeof x) => mul(v, v), [x], [secret])[1]));
// A tangent taken to the SERVER by f: FT109 on the tangents.
expectError(jvp((v: typeof x) => reduceSum(v), [x], [secret]));
expectType<F32<["N", 3], "server">>(jvp((v: typeof x) => reduceSum(v), [x], [x])[1]);

// ---- a gradient with respect to the SERVER model of a private loss ---------------------------------

expectError(grad((p: typeof weights) => sum(mul(broadcast(p), mean(secret, 0))))(weights));
expectError(valueAndGrad((p: typeof weights) => sum(mul(broadcast(p), mean(secret, 0))))(weights));
expectType<F32<[3], "server">>(grad((p: typeof weights) => sum(mul(broadcast(p), mean(x, 0))))(weights));

// ---- scan: outputs computed from a carry that private data entered ------------------------------

expectType<F32<["N", 3], "clients-private">>(scan(scale, secret, (c, row) => [mul(c, row), c] as const)[1]);
expectError(reduceSum(scan(scale, secret, (c, row) => [mul(c, row), c] as const)[1]));

// ---- inside map(): the same rules on members -------------------------------------------------------

map(
  (r, s, k) => {
    expectType<F32<["N", 3], "member-private">>(layerNorm(r, scaleOf(r), mean(s, 0)));
    expectType<F32<["N", 3], "member-private">>(clipByNorm(r, mean(s)));
    expectType<F32<["N", 3], "member-private">>(dropout(r, 0.5, k));
    expectType<F32<["N", 3], "member-private">>(jvp((v: typeof r) => mul(v, v), [r], [s])[1]);
    expectType<F32<["N", 3], "member">>(clipByNorm(r, 1));
    return r;
  },
  x,
  secret,
  secretKey,
);
declare function scaleOf(r: F32<["N", 3], "member">): F32<[3], "member">;

// ---- correct private code passes ------------------------------------------------------------------

// Per-client training on private members: normalization, dropout with the client's key, clipping.
const updates = map(
  (w, k, r) => {
    const h = dropout(layerNorm(r, w, w), 0.1, foldIn(k, clientIndex()));
    const g = grad((v: typeof w) => sum(mul(mean(h, 0), v)))(w);
    return clipByNorm(g, 1);
  },
  broadcast(weights),
  broadcast(key),
  secret,
);
expectType<F32<[3], "clients-private">>(updates);
expectType<F32<[3], ReleasedServer>>(dpSum(updates, { clip: 1, noiseMultiplier: 1, key }));

// ---- one mistake, one diagnostic ------------------------------------------------------------------

// A failed operation in a SERVER loss: the gradient's placement is unknown, not private, so the
// update reports nothing more.
expectError(grad((v: typeof weights) => sum(matmul(features, v))));
// (What the failed loss leaves: a loss of unknown placement, or `any`.)
declare const unplacedLoss: (v: F32<[3], "server">) => Tensor<[], "float32">;
// eslint-disable-next-line @typescript-eslint/no-explicit-any
declare const anyLoss: (v: F32<[3], "server">) => any;
expectType<F32<[3], "server">>(sub(weights, grad(unplacedLoss)(weights)));
expectType<F32<[3], "server">>(sub(weights, valueAndGrad(unplacedLoss)(weights)[1]));
expectType<F32<[3], "server">>(sub(weights, grad(anyLoss)(weights)));
// foldIn on a SERVER key read inside map: FT102 on its data, and the key it returns is the
// client's, so the draw from it reports nothing more.
map((r) => {
  expectError(foldIn(key, clientIndex()));
  return r;
}, x);
declare const perClientKey: ReturnType<typeof foldIn<I32<[2], "server">, Tensor<[], "int32", "member">>>;
expectType<F32<[3], "member">>(uniform(perClientKey, [3]));
