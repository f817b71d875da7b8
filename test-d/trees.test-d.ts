/**
 * Elementwise operations on trees (model parameters as records and arrays): two trees pair
 * their leaves by position and need the same structure (FT107); a tensor or number meets every
 * leaf; each pair of leaves follows the usual rules.
 */
import { expectError, expectType } from "tsd";
import { add, jvp, mean, mul, ones, sub } from "../dist/src/index.js";
import { value, type F32 } from "./helpers.js";

type Params = { w: F32<[784, 10], "server">; b: F32<[10], "server"> };
declare const params: Params;
declare const gradients: Params;
declare const learningRate: F32<[]>;
declare const hidden: F32<[784, 128], "server">;
declare const output: F32<[128, 10], "server">;

// ---- trees of the same structure ----------------------------------------------------------

// The SGD step of a whole model.
expectType<Params>(sub(params, mul(gradients, learningRate)));
expectType<Params>(mul(params, 0.5));
expectType<Params>(add(1, params));
expectType<[F32<[784, 128], "server">, F32<[128, 10], "server">]>(sub([hidden, output], [hidden, output]));
expectType<{ layers: [F32<[784, 128], "server">, F32<[128, 10], "server">]; scale: F32<[], "server"> }>(
  add({ layers: [hidden, output], scale: value<F32<[], "server">>() }, { layers: [hidden, output], scale: learningRate }),
);

// ---- trees of different structure (FT107) -------------------------------------------------

// The gradient of one leaf only.
expectError(sub(params, { w: gradients.w }));
// A key renamed on one side.
expectError(sub(params, { w: gradients.w, bias: gradients.b }));
// A layer missing from a list of layers.
expectError(sub([hidden, output], [hidden]));
expectError(add({ layers: [hidden, output] }, { layers: [hidden] }));
// A record meets an array.
expectError(mul(params, [gradients.w, gradients.b]));

// ---- the leaves of matching trees still follow the shape and placement rules --------------

expectError(sub(params, { w: gradients.w, b: value<F32<[784], "server">>() }));
expectError(sub(params, { w: gradients.w, b: value<F32<[10], "clients">>() }));

// ---- a tree's leaves at SERVER and CLIENTS (FT104, naming each leaf) ----------------------

expectError(add(params, value<{ w: F32<[784, 10], "clients">; b: F32<[10], "server"> }>()));
// @ts-expect-error FT104 at w: the failed operation's result is `any`, which raises nothing more.
const mixed = add(params, value<{ w: F32<[784, 10], "clients">; b: F32<[10], "server"> }>());
// eslint-disable-next-line @typescript-eslint/no-explicit-any
expectType<any>(mixed.b);

// ---- jvp(): a tangent per primal leaf, of its shape, at its placement or local (FT206) -----

declare const serverWeights: F32<[3], "server">;
expectType<[F32<[], "server">, F32<[], "server">]>(jvp((w: F32<[3], "server">) => mean(w), [serverWeights], [ones([3])]));
expectType<[F32<[], "server">, F32<[], "server">]>(jvp((w: F32<[3], "server">) => mean(w), [serverWeights], [serverWeights]));
expectError(jvp((w: F32<[3], "server">) => mean(w), [serverWeights], [value<F32<[4], "server">>()]));
expectError(jvp((w: F32<[3], "server">) => mean(w), [serverWeights], [value<F32<[3], "clients">>()]));
expectError(jvp((p: Params) => mean(p.b), [params], [{ w: gradients.w }]));
