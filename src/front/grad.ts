/**
 * grad(f) and valueAndGrad(f): gradients of a scalar float32 function with respect to its
 * first argument (a tensor or a tree, such as model parameters), at any placement (SPEC
 * section 5). Calling the returned function while tracing records the forward and backward
 * computation as IR (see src/transform/vjp.ts); grad(grad(f)) works for scalar functions.
 * jvp(f, primals, tangents) is forward mode (src/transform/jvp.ts).
 */
import type { Message, Validate } from "../../types/errors.js";
import type { Print } from "../../types/print.js";
import type { DType, IsAny, Placement, Tensor } from "../../types/tensor.js";
import { ftError } from "../errors/error.js";
import { printType } from "../ir/print.js";
import { fillLike } from "../transform/emit.js";
import { jvp as jvpGraph } from "../transform/jvp.js";
import { vjp } from "../transform/vjp.js";
import type { TreeDef } from "../ir/types.js";
import { traceBody, isTracer, type Tracer } from "./trace.js";
import { flatten, unflatten } from "./tree.js";
import { asTracer } from "./values.js";

type ScalarLoss = Tensor<[], "float32", Placement>;
/** FT209 unless f returns f32[]; a result whose rank or dtype is not known statically is checked while tracing. */
type LossCheck<Op extends string, R> = IsAny<R> extends true
  ? never
  : R extends ScalarLoss
    ? never
    : R extends Tensor<infer S, infer D, Placement>
      ? number extends S["length"]
        ? never
        : DType extends D
          ? never
          : Message<"FT209", { op: Op; got: Print<R> }>
      : Message<"FT209", { op: Op; got: Print<R> }>;

const isLeaf = (x: unknown): x is Tracer | number => isTracer(x) || typeof x === "number";

/** Traces f on the arguments and differentiates with respect to the first one. */
function differentiate(op: string, f: (...args: unknown[]) => unknown, args: readonly unknown[]): { value: Tracer; grads: unknown } {
  if (args.length === 0) throw ftError("FT209", { op, got: "no argument to differentiate" });
  const flat = flatten(args, isLeaf, `${op}() argument`);
  const leaves = flat.leaves.map((x) => asTracer(x, op));
  const firstArg = flatten(args[0], isLeaf, `${op}() argument`);
  const differentiated = leaves.map((t, i) => i < firstArg.leaves.length && t.dtype === "float32");
  const body = traceBody(op, leaves.map((t) => t.type), (ins) => {
    const out = f(...(unflatten(flat.def, ins) as unknown[]));
    if (!isTracer(out) || out.shape.length !== 0 || out.dtype !== "float32") {
      throw ftError("FT209", { op, got: isTracer(out) ? printType(out.type) : typeof out });
    }
    return [out];
  });
  const { outputs, inputCotangents } = vjp(
    body.graph,
    leaves[0]!.graph.values.types,
    [...leaves, ...body.captures],
    [...differentiated, ...body.captures.map(() => false)],
    (outs) => [fillLike(1, outs[0]!)],
  );
  const grads = firstArg.leaves.map((_, i) => inputCotangents[i] ?? fillLike(0, leaves[i]!));
  return { value: outputs[0]!, grads: unflatten(firstArg.def, grads) };
}

/** The gradient of a scalar f32 function with respect to its first argument, shaped like it. */
export function grad<A extends readonly unknown[], R>(f: (...args: A) => Validate<R, LossCheck<"grad", R>>): (...args: A) => A[0] {
  return (...args) => differentiate("grad", f as never, args).grads as A[0];
}

/** [f(args), grad(f)(args)] in one pass. */
export function valueAndGrad<A extends readonly unknown[], R>(
  f: (...args: A) => Validate<R, LossCheck<"valueAndGrad", R>>,
): (...args: A) => [R, A[0]] {
  return (...args) => {
    const { value, grads } = differentiate("valueAndGrad", f as never, args);
    return [value as R, grads as A[0]];
  };
}

/**
 * Forward mode: [f(...primals), the derivative of f at primals along tangents], as JAX's
 * jvp. `tangents` has the structure of `primals` (a tangent per float32 leaf; int32 and bool
 * leaves take none, whatever is given). The output tangent has the structure of f's output.
 */
export function jvp<A extends readonly unknown[], R>(f: (...args: A) => R, primals: readonly [...A], tangents: readonly [...A]): [R, R] {
  const op = "jvp";
  const flatPrimals = flatten(primals, isLeaf, "jvp() primals");
  const flatTangents = flatten(tangents, isLeaf, "jvp() tangents");
  if (flatTangents.leaves.length !== flatPrimals.leaves.length) {
    throw ftError("FT107", { op, path: "the tangents (they must have the primals' structure)" });
  }
  const leaves = flatPrimals.leaves.map((x) => asTracer(x, op));
  const tangentLeaves = flatTangents.leaves.map((t, i) => asTracer(t, op, leaves[i]));
  tangentLeaves.forEach((t, i) => {
    const p = leaves[i]!;
    if (p.dtype === "float32" && (t.dtype !== "float32" || t.shape.length !== p.shape.length || t.shape.some((d, j) => d !== null && p.shape[j] !== null && d !== p.shape[j]))) {
      throw ftError("FT206", { op, axis: "any", a: printType(p.type), b: printType(t.type) });
    }
  });
  let outDef: TreeDef = 0;
  const body = traceBody(op, leaves.map((t) => t.type), (ins) => {
    const out = flatten(f(...(unflatten(flatPrimals.def, ins) as unknown as A)), isTracer, "jvp() result");
    outDef = out.def;
    return out.leaves;
  });
  const result = jvpGraph(body.graph, [...leaves, ...body.captures], [...tangentLeaves, ...body.captures.map(() => undefined)]);
  const outTangents = result.outputs.map((y, i) => result.tangents[i] ?? fillLike(0, y));
  return [unflatten(outDef, result.outputs) as R, unflatten(outDef, outTangents) as R];
}
