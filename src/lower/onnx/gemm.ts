/**
 * Folding an update into Gemm: `w - s * (a @ b)` and `w + s * (a @ b)` on 2-D float operands,
 * with a scalar s (the learning rate of an SGD step), become one Gemm that accumulates into w:
 * Gemm(a, s' * b, w), with s' = -s or s applied to the smaller operand (or as Gemm's alpha
 * when s is a constant) and transposed operands read through transA/transB. That replaces two
 * passes over the product (the scaling and the sum) with Gemm's accumulation. The product and
 * its scaling must have no other use, or they would be computed twice.
 */
import type { Node } from "../../ir/types.js";
import { shapeOf, type OnnxContext, type OnnxRule } from "./rules.js";

const size = (shape: readonly number[]) => shape.reduce((n, d) => n * d, 1);
const is2dFloat = (cx: OnnxContext, id: number) => cx.types[id]!.dtype === "float32" && shapeOf(cx, id).length === 2;

/** A matmul operand, read through a 2-D transpose when it is one. */
function operand(cx: OnnxContext, id: number): { name: string; transposed: number; elements: number } {
  const producer = cx.producer(id);
  const elements = size(shapeOf(cx, id));
  if (producer?.op === "transpose" && shapeOf(cx, id).length === 2) return { name: cx.name(producer.inputs[0]!), transposed: 1, elements };
  return { name: cx.name(id), transposed: 0, elements };
}

interface ScaledProduct {
  readonly a: number;
  readonly b: number;
  /** The scalar factor's value id, if any. */
  readonly scale?: number;
}

/** `id` as a 2-D matmul, possibly times a one-element value, used only here. */
function scaledProduct(cx: OnnxContext, id: number): ScaledProduct | undefined {
  const node = cx.producer(id);
  if (node === undefined || cx.uses(id) !== 1) return undefined;
  const plain = (n: Node): ScaledProduct | undefined =>
    n.op === "matmul" && is2dFloat(cx, n.inputs[0]!) && is2dFloat(cx, n.inputs[1]!) ? { a: n.inputs[0]!, b: n.inputs[1]! } : undefined;
  if (node.op === "matmul") return plain(node);
  if (node.op !== "mul") return undefined;
  for (const [m, s] of [node.inputs, [...node.inputs].reverse()] as [number, number][]) {
    const product = cx.producer(m);
    if (product !== undefined && cx.uses(m) === 1 && size(shapeOf(cx, s)) === 1) {
      const found = plain(product);
      if (found !== undefined) return { ...found, scale: s };
    }
  }
  return undefined;
}

/** A constant's single number, if `id` is one. */
function constantScalar(cx: OnnxContext, id: number): number | undefined {
  const node = cx.producer(id);
  return node?.op === "constant" && typeof node.attrs.value === "number" ? node.attrs.value : undefined;
}

function gemm(cx: OnnxContext, accumulator: number, product: ScaledProduct, sign: 1 | -1): string {
  const [a, b] = [operand(cx, product.a), operand(cx, product.b)];
  const attrs = { transA: a.transposed, transB: b.transposed, beta: { float: 1 } };
  const fixed = product.scale === undefined ? 1 : constantScalar(cx, product.scale);
  if (fixed !== undefined) return cx.g.op1("Gemm", [a.name, b.name, cx.name(accumulator)], { ...attrs, alpha: { float: sign * fixed } });
  const scale = cx.g.op1("Reshape", [cx.name(product.scale!), cx.g.model.ints([])]);
  const signed = sign === 1 ? scale : cx.g.op1("Neg", [scale]);
  const [scaledA, scaledB] = a.elements <= b.elements ? [cx.g.op1("Mul", [a.name, signed]), b.name] : [a.name, cx.g.op1("Mul", [b.name, signed])];
  return cx.g.op1("Gemm", [scaledA, scaledB, cx.name(accumulator)], { ...attrs, alpha: { float: 1 } });
}

/** add or sub whose second operand (either, for add) is a scaled 2-D product of the output's shape: one Gemm. */
export function foldingIntoGemm(sign: 1 | -1, plain: OnnxRule): OnnxRule {
  return (node, cx) => {
    const out = shapeOf(cx, node.outputs[0]!);
    const sameAsOut = (id: number) => is2dFloat(cx, id) && out.length === 2 && shapeOf(cx, id).every((d, i) => d === out[i]);
    const candidates = sign === 1 ? [[0, 1], [1, 0]] : [[0, 1]];
    for (const [acc, term] of candidates as [number, number][]) {
      const accumulator = node.inputs[acc]!;
      const fits = sameAsOut(accumulator) && sameAsOut(node.inputs[term]!);
      const product = fits ? scaledProduct(cx, node.inputs[term]!) : undefined;
      if (product !== undefined) return [gemm(cx, accumulator, product, sign)];
    }
    return plain(node, cx);
  };
}
