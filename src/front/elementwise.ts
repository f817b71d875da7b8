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
/**
 * a + b, elementwise with numpy broadcasting, f32 or i32; on trees, leaf by leaf.
 *
 * @placement `a@P` and `b@P` to `@P`, computed per location (SERVER, CLIENTS or local); a local
 * operand (a number or constant) takes the placed one's placement; SERVER with CLIENTS is FT104.
 */
export const add = binaryOp<"add", "numeric">("add", "add");
/**
 * a - b, elementwise with numpy broadcasting, f32 or i32; on trees, leaf by leaf (a model update:
 * `sub(params, mul(grads, lr))`).
 *
 * @placement `a@P` and `b@P` to `@P`, computed per location (SERVER, CLIENTS or local); a local
 * operand (a number or constant) takes the placed one's placement; SERVER with CLIENTS is FT104.
 */
export const sub = binaryOp<"sub", "numeric">("sub", "sub");
/**
 * a * b, elementwise with numpy broadcasting, f32 or i32; on trees, leaf by leaf.
 *
 * @placement `a@P` and `b@P` to `@P`, computed per location (SERVER, CLIENTS or local); a local
 * operand (a number or constant) takes the placed one's placement; SERVER with CLIENTS is FT104.
 */
export const mul = binaryOp<"mul", "numeric">("mul", "mul");
/**
 * The larger of a and b, elementwise with numpy broadcasting, f32 or i32.
 *
 * @placement `a@P` and `b@P` to `@P`, computed per location (SERVER, CLIENTS or local); a local
 * operand (a number or constant) takes the placed one's placement; SERVER with CLIENTS is FT104.
 */
export const maximum = binaryOp<"maximum", "numeric">("maximum", "maximum");
/**
 * The smaller of a and b, elementwise with numpy broadcasting, f32 or i32.
 *
 * @placement `a@P` and `b@P` to `@P`, computed per location (SERVER, CLIENTS or local); a local
 * operand (a number or constant) takes the placed one's placement; SERVER with CLIENTS is FT104.
 */
export const minimum = binaryOp<"minimum", "numeric">("minimum", "minimum");
// Float only
/**
 * a / b, elementwise with numpy broadcasting; float32 only (cast integers first).
 *
 * @placement `a@P` and `b@P` to `@P`, computed per location (SERVER, CLIENTS or local); a local
 * operand (a number or constant) takes the placed one's placement; SERVER with CLIENTS is FT104.
 */
export const div = binaryOp<"div", "float">("div", "div");
/**
 * a to the power b, elementwise with numpy broadcasting; float32 only.
 *
 * @placement `a@P` and `b@P` to `@P`, computed per location (SERVER, CLIENTS or local); a local
 * operand (a number or constant) takes the placed one's placement; SERVER with CLIENTS is FT104.
 * @example
 * program({ x: atClients(f32([3])) }, ({ x }) => reduceMean(map((xm) => pow(xm, 2), x)));
 */
export const pow = binaryOp<"pow", "float">("pow", "pow");
/**
 * a mod b with the sign of b (floored, as Python's %, numpy's and JAX's mod), f32 or i32; i32 a mod 0 is a.
 *
 * @placement `a@P` and `b@P` to `@P`, computed per location (SERVER, CLIENTS or local); a local
 * operand (a number or constant) takes the placed one's placement; SERVER with CLIENTS is FT104.
 * @example
 * program({ i: atServer(i32([4])) }, ({ i }) => mod(i, 3));
 */
export const mod = binaryOp<"mod", "numeric">("mod", "mod");
// Comparisons, to bool
/**
 * a < b, elementwise with numpy broadcasting, as bool (f32 or i32 operands).
 *
 * @placement `a@P` and `b@P` to `@P`, computed per location (SERVER, CLIENTS or local); a local
 * operand (a number or constant) takes the placed one's placement; SERVER with CLIENTS is FT104.
 * @example
 * program({ x: atServer(f32([4])) }, ({ x }) => cast(less(x, 0), "float32"));
 */
export const less = binaryOp<"less", "compare">("less", "less");
/**
 * a <= b, elementwise with numpy broadcasting, as bool (f32 or i32 operands).
 *
 * @placement `a@P` and `b@P` to `@P`, computed per location (SERVER, CLIENTS or local); a local
 * operand (a number or constant) takes the placed one's placement; SERVER with CLIENTS is FT104.
 * @example
 * program({ x: atServer(f32([4])) }, ({ x }) => where(lessEqual(x, 1), x, 1));
 */
export const lessEqual = binaryOp<"lessEqual", "compare">("lessEqual", "less_equal");
/**
 * a > b, elementwise with numpy broadcasting, as bool (f32 or i32 operands).
 *
 * @placement `a@P` and `b@P` to `@P`, computed per location (SERVER, CLIENTS or local); a local
 * operand (a number or constant) takes the placed one's placement; SERVER with CLIENTS is FT104.
 */
export const greater = binaryOp<"greater", "compare">("greater", "greater");
/**
 * a >= b, elementwise with numpy broadcasting, as bool (f32 or i32 operands).
 *
 * @placement `a@P` and `b@P` to `@P`, computed per location (SERVER, CLIENTS or local); a local
 * operand (a number or constant) takes the placed one's placement; SERVER with CLIENTS is FT104.
 * @example
 * program({ x: atServer(f32([4])) }, ({ x }) => where(greaterEqual(x, 0), x, 0));
 */
export const greaterEqual = binaryOp<"greaterEqual", "compare">("greaterEqual", "greater_equal");
/**
 * a == b, elementwise with numpy broadcasting, as bool (operands of one dtype, bool included).
 *
 * @placement `a@P` and `b@P` to `@P`, computed per location (SERVER, CLIENTS or local); a local
 * operand (a number or constant) takes the placed one's placement; SERVER with CLIENTS is FT104.
 */
export const equal = binaryOp<"equal", "equality">("equal", "equal");
/**
 * a != b, elementwise with numpy broadcasting, as bool (operands of one dtype, bool included).
 *
 * @placement `a@P` and `b@P` to `@P`, computed per location (SERVER, CLIENTS or local); a local
 * operand (a number or constant) takes the placed one's placement; SERVER with CLIENTS is FT104.
 * @example
 * program({ y: atServer(i32([8])), p: atServer(i32([8])) }, ({ y, p }) => sum(cast(notEqual(y, p), "int32")));
 */
export const notEqual = binaryOp<"notEqual", "equality">("notEqual", "not_equal");
/**
 * a AND b, elementwise with numpy broadcasting, on bool tensors.
 *
 * @placement `a@P` and `b@P` to `@P`, computed per location (SERVER, CLIENTS or local); a local
 * operand (a number or constant) takes the placed one's placement; SERVER with CLIENTS is FT104.
 * @example
 * program({ x: atServer(f32([4])) }, ({ x }) => logicalAnd(greater(x, 0), less(x, 1)));
 */
export const logicalAnd = binaryOp<"logicalAnd", "logical">("logicalAnd", "logical_and");
/**
 * a OR b, elementwise with numpy broadcasting, on bool tensors.
 *
 * @placement `a@P` and `b@P` to `@P`, computed per location (SERVER, CLIENTS or local); a local
 * operand (a number or constant) takes the placed one's placement; SERVER with CLIENTS is FT104.
 * @example
 * program({ x: atServer(f32([4])) }, ({ x }) => logicalOr(less(x, -1), greater(x, 1)));
 */
export const logicalOr = binaryOp<"logicalOr", "logical">("logicalOr", "logical_or");

/**
 * -x, elementwise, f32 or i32; on trees, leaf by leaf.
 *
 * @placement `x@P` to `@P`: any placement, kept.
 * @example
 * program({ g: atServer(f32([10])) }, ({ g }) => neg(g));
 */
export const neg = unaryOp<"neg", "numeric">("neg", "neg");
/**
 * |x|, elementwise, f32 or i32.
 *
 * @placement `x@P` to `@P`: any placement, kept.
 * @example
 * program({ x: atClients(f32([3])) }, ({ x }) => reduceMax(map((xm) => max(abs(xm)), x)));
 */
export const abs = unaryOp<"abs", "numeric">("abs", "abs");
/**
 * -1, 0 or 1 by the sign of x, elementwise, f32 or i32.
 *
 * @placement `x@P` to `@P`: any placement, kept.
 */
export const sign = unaryOp<"sign", "numeric">("sign", "sign");
/**
 * e to the x, elementwise; float32 only.
 *
 * @placement `x@P` to `@P`: any placement, kept.
 * @example
 * program({ x: atServer(f32([4])) }, ({ x }) => div(exp(x), sum(exp(x))));
 */
export const exp = unaryOp<"exp", "float">("exp", "exp");
/**
 * The natural logarithm, elementwise; float32 only (log of 0 is -Infinity).
 *
 * @placement `x@P` to `@P`: any placement, kept.
 * @example
 * program({ p: atServer(f32([4])) }, ({ p }) => neg(sum(mul(p, log(p)))));
 */
export const log = unaryOp<"log", "float">("log", "log");
/**
 * The square root, elementwise; float32 only.
 *
 * @placement `x@P` to `@P`: any placement, kept.
 */
export const sqrt = unaryOp<"sqrt", "float">("sqrt", "sqrt");
/**
 * NOT x, elementwise, on bool tensors.
 *
 * @placement `x@P` to `@P`: any placement, kept.
 * @example
 * program({ x: atServer(f32([4])) }, ({ x }) => logicalNot(greater(x, 0)));
 */
export const logicalNot = unaryOp<"logicalNot", "logical">("logicalNot", "logical_not");
/**
 * max(x, 0), elementwise, f32 or i32 (gradient 0 at and below 0).
 *
 * @placement `x@P` to `@P`: any placement, kept.
 * @example
 * program({ w: atServer(f32([784, 10])), x: atServer(f32(["B", 784])) }, ({ w, x }) => relu(matmul(x, w)));
 */
export const relu = unaryOp<"relu", "numeric">("relu", "relu");
/**
 * 1 / (1 + exp(-x)), elementwise; float32 only.
 *
 * @placement `x@P` to `@P`: any placement, kept.
 * @example
 * program({ z: atServer(f32(["B"])) }, ({ z }) => sigmoid(z));
 */
export const sigmoid = unaryOp<"sigmoid", "float">("sigmoid", "sigmoid");
/**
 * The hyperbolic tangent, elementwise; float32 only.
 *
 * @placement `x@P` to `@P`: any placement, kept.
 * @example
 * program({ z: atServer(f32(["B", 16])) }, ({ z }) => tanh(z));
 */
export const tanh = unaryOp<"tanh", "float">("tanh", "tanh");
/**
 * The sine (radians), elementwise; float32 only.
 *
 * @placement `x@P` to `@P`: any placement, kept.
 * @example
 * program({ t: atServer(f32([8])) }, ({ t }) => sin(t));
 */
export const sin = unaryOp<"sin", "float">("sin", "sin");
/**
 * The cosine (radians), elementwise; float32 only.
 *
 * @placement `x@P` to `@P`: any placement, kept.
 * @example
 * program({ t: atServer(f32([8])) }, ({ t }) => cos(t));
 */
export const cos = unaryOp<"cos", "float">("cos", "cos");
/**
 * x itself, but differentiation treats it as a constant (gradient 0), as JAX's stop_gradient; any
 * dtype.
 *
 * @placement `x@P` to `@P`: any placement, kept.
 * @example
 * const loss = (w: Tensor<[3], "float32", "local">) => sum(mul(w, stopGradient(w)));
 * const g = grad(loss); // d/dw of w * const(w): w, not 2w
 */
export const stopGradient = unaryOp<"stopGradient", "any">("stopGradient", "stop_gradient");
/**
 * log(1 + x), accurate for small x (where log(add(1, x)) loses every digit).
 *
 * @placement `x@P` to `@P`: any placement, kept.
 * @example
 * program({ x: atServer(f32([4])) }, ({ x }) => log1p(x));
 */
export const log1p = unaryOp<"log1p", "float">("log1p", "log1p");
/**
 * The largest integer not above x (f32; gradient 0, as in JAX).
 *
 * @placement `x@P` to `@P`: any placement, kept.
 * @example
 * program({ x: atServer(f32([4])) }, ({ x }) => floor(mul(x, 10)));
 */
export const floor = unaryOp<"floor", "float">("floor", "floor");
/**
 * The nearest integer, halves to the even one (f32; gradient 0, as in JAX).
 *
 * @placement `x@P` to `@P`: any placement, kept.
 */
export const round = unaryOp<"round", "float">("round", "round");

/**
 * x * x, f32 or i32: a composite of mul, so its gradient is 2x.
 *
 * @placement `x@P` to `@P`: any placement, kept.
 * @example
 * program({ x: atClients(f32([3])) }, ({ x }) => reduceMean(map((xm) => sum(square(xm)), x)));
 */
export const square = unaryComposite<"square", "numeric">("square", (x) => emitBinary("mul", "square", x, x));

/**
 * log(1 + exp(x)), computed stably as max(x, 0) + log1p(exp(-|x|)): exp never overflows and
 * the tail of either side keeps its digits. A composite whose gradient is sigmoid(x): max(x, 0)
 * is written (x + |x|) / 2 (exact in float), whose derivative at 0 is 1/2 = sigmoid(0), where
 * maximum's or relu's would give 1 or 0.
 * @placement `x@P` to `@P`: any placement, kept.
 * @example
 * program({ z: atServer(f32([4])) }, ({ z }) => softplus(z));
 */
export const softplus = unaryComposite<"softplus", "float">("softplus", (x) => softplusOf("softplus", x));

/** softplus of one leaf, for the losses too. */
export function softplusOf(op: string, x: Tracer): Tracer {
  const g = currentGraph(op);
  const magnitude = g.emit("abs", [x], {}, op)[0]!;
  const tail = g.emit("log1p", [g.emit("exp", [g.emit("neg", [magnitude], {}, op)[0]!], {}, op)[0]!], {}, op)[0]!;
  return emitBinary("add", op, emitBinary("mul", op, emitBinary("add", op, x, magnitude), 0.5), tail);
}
