/**
 * Folding an update into Gemm: `w - s * (a @ b)` and `w + s * (a @ b)` on 2-D float operands,
 * with s a product of scalars (an SGD step's -lr, local training's 0 or 1 for a padding
 * step), become one Gemm that accumulates into w: Gemm(a, s * b, w), the variable scalars
 * applied to the smaller operand, the constant ones and the sign as Gemm's alpha, and
 * transposed operands read through transA/transB. That replaces two
 * passes over the product (the scaling and the sum) with Gemm's accumulation. The product and
 * its scaling must have no other use, or they would be computed twice.
 */
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
  /** The one-element factors' value ids (none, one, or a chain: SGD's -lr, then local training's 0/1 per step). */
  readonly scales: readonly number[];
}

/** `id` as a 2-D matmul, possibly times one-element values (in any nesting of muls), each used only here. */
function scaledProduct(cx: OnnxContext, id: number): ScaledProduct | undefined {
  const node = cx.producer(id);
  if (node === undefined || cx.uses(id) !== 1) return undefined;
  if (node.op === "matmul") return is2dFloat(cx, node.inputs[0]!) && is2dFloat(cx, node.inputs[1]!) ? { a: node.inputs[0]!, b: node.inputs[1]!, scales: [] } : undefined;
  if (node.op !== "mul") return undefined;
  for (const [m, s] of [node.inputs, [...node.inputs].reverse()] as [number, number][]) {
    const inner = size(shapeOf(cx, s)) === 1 ? scaledProduct(cx, m) : undefined;
    if (inner !== undefined) return { ...inner, scales: [...inner.scales, s] };
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
  // Constant factors go into alpha; the others multiply into one scalar, applied to the smaller operand.
  let alpha: number = sign;
  const variable: string[] = [];
  for (const s of product.scales) {
    const fixed = constantScalar(cx, s);
    if (fixed === undefined) variable.push(cx.g.op1("Reshape", [cx.name(s), cx.g.model.ints([])]));
    else alpha *= fixed;
  }
  let [scaledA, scaledB] = [a.name, b.name];
  if (variable.length > 0) {
    const scale = variable.reduce((x, y) => cx.g.op1("Mul", [x, y]));
    if (a.elements <= b.elements) scaledA = cx.g.op1("Mul", [a.name, scale]);
    else scaledB = cx.g.op1("Mul", [b.name, scale]);
  }
  return cx.g.op1("Gemm", [scaledA, scaledB, cx.name(accumulator)], { ...attrs, alpha: { float: alpha } });
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
