/**
 * Elementwise operations. They work on tensors, plain numbers and whole trees (so a model
 * update reads `sub(params, mul(grads, lr))`), at any placement: the rules of SPEC sections 3-4
 * decide the result's placement, dtype and shape, and tsc reports violations on the second
 * operand.
 */
import type { Checked, Outcome } from "../../types/errors.js";
import type { DTypeClass, Elementwise, Unary } from "../../types/ops.js";
import type { TreeLike } from "../../types/tensor.js";
import type { ErrorCode } from "../errors/catalogue.js";
import { FedTensorError, ftError } from "../errors/error.js";
import type { TreeDef } from "../ir/types.js";
import { currentGraph, isTracer, type Tracer } from "./trace.js";
import { flatten, leafPaths, unflatten } from "./tree.js";
import { asTracer } from "./values.js";

export type Operand = TreeLike | number;

export type BinaryFn<Op extends string, Class extends DTypeClass> = <const A extends Operand, const B extends Operand>(
  a: A,
  b: Checked<B, Elementwise<Op, Class, A, B>>,
) => Outcome<Elementwise<Op, Class, A, B>>;

export type UnaryFn<Op extends string, Class extends DTypeClass> = <A extends TreeLike>(
  a: Checked<A, Unary<Op, Class, A>>,
) => Outcome<Unary<Op, Class, A>>;

const isLeaf = (x: unknown): x is Tracer | number => isTracer(x) || typeof x === "number";

const keyPath = (path: string, key: string): string => (path === "" ? key : `${path}.${key}`);

/**
 * How two trees first differ, in the words of types/ops.ts (StructureDiff), or undefined. A
 * leaf meets a whole subtree (zipTrees pairs it with every leaf there), as in the types.
 */
function structureDiff(a: TreeDef, b: TreeDef, path: string): string | undefined {
  if (typeof a === "number" || typeof b === "number") return undefined;
  const here = path === "" ? "the root" : path;
  if (Array.isArray(a) !== Array.isArray(b)) {
    return `${here} is ${Array.isArray(a) ? "an array" : "a record"} in the first operand, ${Array.isArray(b) ? "an array" : "a record"} in the second`;
  }
  if (Array.isArray(a)) {
    const bs = b as readonly TreeDef[];
    if (a.length !== bs.length) return `${path === "" ? "the operands" : path} have ${a.length} vs ${bs.length} elements`;
    for (let i = 0; i < a.length; i++) {
      const diff = structureDiff(a[i]!, bs[i]!, `${path}[${i}]`);
      if (diff !== undefined) return diff;
    }
    return undefined;
  }
  const ra = a as Record<string, TreeDef>;
  const rb = b as Record<string, TreeDef>;
  const lacking = Object.keys(ra).find((k) => !(k in rb));
  if (lacking !== undefined) return `the second operand lacks ${keyPath(path, lacking)}`;
  const extra = Object.keys(rb).find((k) => !(k in ra));
  if (extra !== undefined) return `the first operand lacks ${keyPath(path, extra)}`;
  for (const k of Object.keys(ra)) {
    const diff = structureDiff(ra[k]!, rb[k]!, keyPath(path, k));
    if (diff !== undefined) return diff;
  }
  return undefined;
}

/**
 * The parameter of each code's message that names the operand, where a tree's leaf path is
 * added ("{f32[10]}@CLIENTS at w1"), as types/print.ts At does at type level.
 */
const leafParam: Partial<Record<ErrorCode, string>> = { FT102: "got", FT104: "b", FT106: "got", FT201: "b", FT205: "got" };

/** Runs a leaf operation, naming the leaf's path in the error it throws. */
function atLeaf<T>(path: string, leaf: () => T): T {
  try {
    return leaf();
  } catch (error) {
    const param = error instanceof FedTensorError ? leafParam[error.code] : undefined;
    if (path === "" || param === undefined) throw error;
    const e = error as FedTensorError;
    throw new FedTensorError(e.code, { ...e.params, [param]: `${e.params[param]} at ${path}` });
  }
}

/** Applies a leaf operation across operands that may be trees (see types/ops.ts Elementwise). */
export function zipTrees(op: string, a: unknown, b: unknown, leaf: (x: Tracer | number, y: Tracer | number) => Tracer): unknown {
  if (isLeaf(a) && isLeaf(b)) return leaf(a, b);
  if (isLeaf(a)) {
    const fb = flatten(b, isLeaf, `${op}() operand`);
    const paths = leafPaths(fb.def);
    return unflatten(fb.def, fb.leaves.map((y, i) => atLeaf(paths[i]!, () => leaf(a, y))));
  }
  const fa = flatten(a, isLeaf, `${op}() operand`);
  const paths = leafPaths(fa.def);
  if (isLeaf(b)) return unflatten(fa.def, fa.leaves.map((x, i) => atLeaf(paths[i]!, () => leaf(x, b))));
  const fb = flatten(b, isLeaf, `${op}() operand`);
  const diff = structureDiff(fa.def, fb.def, "");
  if (diff !== undefined) throw ftError("FT107", { op, what: diff });
  return unflatten(fa.def, fa.leaves.map((x, i) => atLeaf(paths[i]!, () => leaf(x, fb.leaves[i]!))));
}

/** Emits a binary primitive on two leaves, numbers becoming constants of the other's dtype. */
export function emitBinary(primitive: string, op: string, a: Tracer | number, b: Tracer | number): Tracer {
  const ta = asTracer(a, op, isTracer(b) ? b : undefined);
  const tb = asTracer(b, op, ta);
  return currentGraph(op).emit(primitive, [ta, tb], {}, op)[0]!;
}

/** A binary operation; Class is its dtype class for the types, the primitive table applies the same at run time. */
export function binaryOp<Op extends string, Class extends DTypeClass>(op: Op, primitive: string): BinaryFn<Op, Class> {
  return ((a: unknown, b: unknown) => zipTrees(op, a, b, (x, y) => emitBinary(primitive, op, x, y))) as never;
}

export function unaryOp<Op extends string, Class extends DTypeClass>(op: Op, primitive: string): UnaryFn<Op, Class> {
  return unaryComposite(op, (x) => currentGraph(op).emit(primitive, [x], {}, op)[0]!);
}

/** A unary operation made of primitives, applied to every leaf of a tree (Class as unaryOp's). */
function unaryComposite<Op extends string, Class extends DTypeClass>(op: Op, leaf: (x: Tracer) => Tracer): UnaryFn<Op, Class> {
  return ((a: unknown) => {
    const fa = flatten(a, isTracer, `${op}() operand`);
    return unflatten(fa.def, fa.leaves.map(leaf));
  }) as never;
}

// Arithmetic (f32 or i32)
export const add = binaryOp<"add", "numeric">("add", "add");
export const sub = binaryOp<"sub", "numeric">("sub", "sub");
export const mul = binaryOp<"mul", "numeric">("mul", "mul");
export const maximum = binaryOp<"maximum", "numeric">("maximum", "maximum");
export const minimum = binaryOp<"minimum", "numeric">("minimum", "minimum");
// Float only
export const div = binaryOp<"div", "float">("div", "div");
export const pow = binaryOp<"pow", "float">("pow", "pow");
/** a mod b with the sign of b (floored, as Python's %, numpy's and JAX's mod), f32 or i32; i32 a mod 0 is a. */
export const mod = binaryOp<"mod", "numeric">("mod", "mod");
// Comparisons, to bool
export const less = binaryOp<"less", "compare">("less", "less");
export const lessEqual = binaryOp<"lessEqual", "compare">("lessEqual", "less_equal");
export const greater = binaryOp<"greater", "compare">("greater", "greater");
export const greaterEqual = binaryOp<"greaterEqual", "compare">("greaterEqual", "greater_equal");
export const equal = binaryOp<"equal", "equality">("equal", "equal");
export const notEqual = binaryOp<"notEqual", "equality">("notEqual", "not_equal");
export const logicalAnd = binaryOp<"logicalAnd", "logical">("logicalAnd", "logical_and");
export const logicalOr = binaryOp<"logicalOr", "logical">("logicalOr", "logical_or");

export const neg = unaryOp<"neg", "numeric">("neg", "neg");
export const abs = unaryOp<"abs", "numeric">("abs", "abs");
export const sign = unaryOp<"sign", "numeric">("sign", "sign");
export const exp = unaryOp<"exp", "float">("exp", "exp");
export const log = unaryOp<"log", "float">("log", "log");
export const sqrt = unaryOp<"sqrt", "float">("sqrt", "sqrt");
export const logicalNot = unaryOp<"logicalNot", "logical">("logicalNot", "logical_not");
export const relu = unaryOp<"relu", "numeric">("relu", "relu");
export const sigmoid = unaryOp<"sigmoid", "float">("sigmoid", "sigmoid");
export const tanh = unaryOp<"tanh", "float">("tanh", "tanh");
export const sin = unaryOp<"sin", "float">("sin", "sin");
export const cos = unaryOp<"cos", "float">("cos", "cos");
export const stopGradient = unaryOp<"stopGradient", "any">("stopGradient", "stop_gradient");
/** log(1 + x), accurate for small x (where log(add(1, x)) loses every digit). */
export const log1p = unaryOp<"log1p", "float">("log1p", "log1p");
/** The largest integer not above x (f32; gradient 0, as in JAX). */
export const floor = unaryOp<"floor", "float">("floor", "floor");
/** The nearest integer, halves to the even one (f32; gradient 0, as in JAX). */
export const round = unaryOp<"round", "float">("round", "round");

/** x * x, f32 or i32: a composite of mul, so its gradient is 2x. */
export const square = unaryComposite<"square", "numeric">("square", (x) => emitBinary("mul", "square", x, x));

/**
 * log(1 + exp(x)), computed stably as max(x, 0) + log1p(exp(-|x|)): exp never overflows and
 * the tail of either side keeps its digits. A composite whose gradient is sigmoid(x): max(x, 0)
 * is written (x + |x|) / 2 (exact in float), whose derivative at 0 is 1/2 = sigmoid(0), where
 * maximum's or relu's would give 1 or 0.
 */
export const softplus = unaryComposite<"softplus", "float">("softplus", (x) => softplusOf("softplus", x));

/** softplus of one leaf, for the losses too. */
export function softplusOf(op: string, x: Tracer): Tracer {
  const g = currentGraph(op);
  const magnitude = g.emit("abs", [x], {}, op)[0]!;
  const tail = g.emit("log1p", [g.emit("exp", [g.emit("neg", [magnitude], {}, op)[0]!], {}, op)[0]!], {}, op)[0]!;
  return emitBinary("add", op, emitBinary("mul", op, emitBinary("add", op, x, magnitude), 0.5), tail);
}
