/**
 * Convolution and pooling in ONNX. The IR is NHWC with HWIO filters, ONNX is NCHW with OIHW
 * filters: operands are transposed in and results out (onnxruntime fuses the transposes
 * into its NCHWc kernels where it can). Padding is TensorFlow's: SAME puts the odd pixel
 * after, so pads are computed here rather than left to auto_pad.
 */
import type { Node } from "../../ir/types.js";
import { inShape, outShape, reshape, type OnnxContext, type OnnxRule } from "./rules.js";

const toChannelsFirst = [0, 3, 1, 2];
const toChannelsLast = [0, 2, 3, 1];
/** HWIO to OIHW (Conv's weights) and to (I=O of the transpose, O, H, W) for ConvTranspose alike. */
const filterToOihw = [3, 2, 0, 1];

interface Window {
  readonly strides: [number, number];
  readonly padding: "same" | "valid";
}

/** TensorFlow's padding of one spatial dim: [before, after]. */
function padsAlong(input: number, output: number, kernel: number, stride: number, padding: Window["padding"]): [number, number] {
  if (padding === "valid") return [0, 0];
  const total = Math.max((output - 1) * stride + kernel - input, 0);
  return [Math.floor(total / 2), total - Math.floor(total / 2)];
}

/** ONNX pads [top, left, bottom, right] of a window op from input [N,H,W,C] to output [N,OH,OW,C]. */
function spatialPads(input: readonly number[], output: readonly number[], kernel: readonly number[], attrs: Window): number[] {
  const [top, bottom] = padsAlong(input[1]!, output[1]!, kernel[0]!, attrs.strides[0], attrs.padding);
  const [left, right] = padsAlong(input[2]!, output[2]!, kernel[1]!, attrs.strides[1], attrs.padding);
  return [top, left, bottom, right];
}

const transpose = (cx: OnnxContext, x: string, perm: readonly number[]) => cx.g.op1("Transpose", [x], { perm });
const windowAttrs = (node: Node) => node.attrs as unknown as Window & { window: [number, number] };

function maxPoolNode(node: Node, cx: OnnxContext, outputs: number): string[] {
  const attrs = windowAttrs(node);
  const x = transpose(cx, cx.name(node.inputs[0]!), toChannelsFirst);
  const pads = spatialPads(inShape(node, cx), pooledShape(node, cx), attrs.window, attrs);
  return cx.g.op("MaxPool", [x], { kernel_shape: attrs.window, strides: attrs.strides, pads }, outputs);
}

/** max_pool's output shape, also for its gradient (whose output is the input's shape: its cotangent has the pooled one). */
function pooledShape(node: Node, cx: OnnxContext): number[] {
  return node.op === "max_pool_grad" ? inShape(node, cx, 1) : outShape(node, cx);
}

export const windowRules: Record<string, OnnxRule> = {
  conv2d: (node, cx) => {
    const filter = inShape(node, cx, 1);
    const x = transpose(cx, cx.name(node.inputs[0]!), toChannelsFirst);
    const w = transpose(cx, cx.name(node.inputs[1]!), filterToOihw);
    const attrs = windowAttrs(node);
    const pads = spatialPads(inShape(node, cx), outShape(node, cx), filter, attrs);
    const y = cx.g.op1("Conv", [x, w], { kernel_shape: filter.slice(0, 2), strides: attrs.strides, pads });
    return [transpose(cx, y, toChannelsLast)];
  },

  /** The transpose of conv2d: ConvTranspose with the forward pads, and output padding for the rows a stride skipped. */
  conv2d_grad_input: (node, cx) => {
    const [ct, filter, like] = [inShape(node, cx, 0), inShape(node, cx, 1), inShape(node, cx, 2)];
    const attrs = windowAttrs(node);
    const pads = spatialPads(like, ct, filter, attrs);
    const covered = [0, 1].map((d) => (ct[d + 1]! - 1) * attrs.strides[d]! + filter[d]! - pads[d]! - pads[d + 2]!);
    const dy = transpose(cx, cx.name(node.inputs[0]!), toChannelsFirst);
    const w = transpose(cx, cx.name(node.inputs[1]!), filterToOihw);
    const dx = cx.g.op1("ConvTranspose", [dy, w], {
      kernel_shape: filter.slice(0, 2),
      strides: attrs.strides,
      pads,
      output_padding: covered.map((c, d) => like[d + 1]! - c),
    });
    return [transpose(cx, dx, toChannelsLast)];
  },

  /**
   * dF[i,j,c,f] = sum over n,oh,ow of xpad[n, oh*sh+i, ow*sw+j, c] dy[n,oh,ow,f]: a convolution
   * of the input (channels as the batch, images as channels) with the cotangent as the filter,
   * dilated by the strides, cropped to the filter's size.
   */
  conv2d_grad_filter: (node, cx) => {
    const [x, dy, filter] = [inShape(node, cx, 0), inShape(node, cx, 1), inShape(node, cx, 2)];
    const attrs = windowAttrs(node);
    const pads = spatialPads(x, dy, filter, attrs);
    const images = transpose(cx, cx.name(node.inputs[0]!), [3, 0, 1, 2]);
    const kernel = transpose(cx, cx.name(node.inputs[1]!), [3, 0, 1, 2]);
    const full = cx.g.op1("Conv", [images, kernel], { kernel_shape: dy.slice(1, 3), dilations: attrs.strides, pads });
    const m = cx.g.model;
    const cropped = cx.g.op1("Slice", [full, m.ints([0, 0]), m.ints(filter.slice(0, 2)), m.ints([2, 3])]);
    return [transpose(cx, cropped, [2, 3, 0, 1])];
  },

  max_pool: (node, cx) => [transpose(cx, maxPoolNode(node, cx, 1)[0]!, toChannelsLast)],

  /**
   * Each output's cotangent added at its window's first maximum: MaxPool's indices (into the
   * NCHW input, flattened) scatter the cotangent into zeros.
   */
  max_pool_grad: (node, cx) => {
    const x = inShape(node, cx);
    const [n, h, w, c] = x as [number, number, number, number];
    const [, indices] = maxPoolNode(node, cx, 2) as [string, string];
    const dy = transpose(cx, cx.name(node.inputs[1]!), toChannelsFirst);
    const zeros = cx.g.op1("ConstantOfShape", [cx.g.model.ints([n * c * h * w])]);
    const flat = cx.g.op1("ScatterElements", [zeros, reshape(cx, indices, [-1]), reshape(cx, dy, [-1])], { axis: 0, reduction: "add" });
    return [transpose(cx, reshape(cx, flat, [n, c, h, w]), toChannelsLast)];
  },

  /** Per window, t at the window's first maximum: MaxPool's indices gather from t (NCHW, flattened). */
  max_pool_pick: (node, cx) => {
    const [n, oh, ow, c] = outShape(node, cx) as [number, number, number, number];
    const [, indices] = maxPoolNode(node, cx, 2) as [string, string];
    const t = transpose(cx, cx.name(node.inputs[1]!), toChannelsFirst);
    const picked = cx.g.op1("Gather", [reshape(cx, t, [-1]), reshape(cx, indices, [-1])], { axis: 0 });
    return [transpose(cx, reshape(cx, picked, [n, c, oh, ow]), toChannelsLast)];
  },
};
