/**
 * Evaluation rules of convolution and max pooling (NHWC) and of their gradients, written as
 * plain loops over every (output, window position) pair so that each gradient visibly
 * routes the same products as its forward rule. Padding follows TensorFlow: SAME pads
 * max((out-1)*stride + k - in, 0) in total, floor(total/2) of it before.
 */
import { ftError } from "../errors/error.js";
import { printShape } from "../ir/print.js";
import { attrNumbers, type RuleContext, type TensorRule } from "./rule.js";
import { addAt, describe, stridesOf, tensor, type Shape, type Tensor } from "./tensor.js";

/** Output size and padding before, along one spatial dim. */
function windowAxis(size: number, k: number, stride: number, padding: string): { out: number; before: number } {
  if (padding === "valid") return { out: Math.max(0, Math.ceil((size - k + 1) / stride)), before: 0 };
  const out = Math.ceil(size / stride);
  return { out, before: Math.floor(Math.max((out - 1) * stride + k - size, 0) / 2) };
}

/** Output sizes, padding before and strides along the two spatial dims of an NHWC input. */
function windowGeometry(x: Shape, [kh, kw]: readonly number[], cx: RuleContext) {
  const [sh, sw] = attrNumbers(cx, "strides") as [number, number];
  const padding = cx.attrs.padding as string;
  return { rows: windowAxis(x[1]!, kh!, sh, padding), cols: windowAxis(x[2]!, kw!, sw, padding), sh, sw };
}

/** Output shape of a window operation with `channels` output channels. */
function windowShape(x: Shape, window: readonly number[], channels: number, cx: RuleContext): number[] {
  const { rows, cols } = windowGeometry(x, window, cx);
  return [x[0]!, rows.out, cols.out, channels];
}

/**
 * Calls visit for every window of an NHWC input of shape x: its output position [n,oh,ow]
 * (flat, without channels) and the flat [n,ih,iw] input positions of its in-range taps with
 * their window offsets (i,j), taps in row-major window order.
 */
function forEachWindow(
  x: Shape,
  window: readonly number[],
  cx: RuleContext,
  visit: (outPixel: number, taps: { pixel: number; i: number; j: number }[]) => void,
): void {
  const [batch, height, width] = x as [number, number, number];
  const [kh, kw] = window as [number, number];
  const { rows, cols, sh, sw } = windowGeometry(x, window, cx);
  for (let n = 0; n < batch; n++) {
    for (let oh = 0; oh < rows.out; oh++) {
      for (let ow = 0; ow < cols.out; ow++) {
        const taps = [];
        for (let i = 0; i < kh; i++) {
          for (let j = 0; j < kw; j++) {
            const [ih, iw] = [oh * sh + i - rows.before, ow * sw + j - cols.before];
            if (ih >= 0 && ih < height && iw >= 0 && iw < width) taps.push({ pixel: (n * height + ih) * width + iw, i, j });
          }
        }
        visit((n * rows.out + oh) * cols.out + ow, taps);
      }
    }
  }
}

/** Every product of conv2d: output[outPos] gets input[xPos] * filter[fPos], for input [N,H,W,C] and filter [kh,kw,C,F]. */
function forEachConvProduct(x: Shape, filter: Shape, cx: RuleContext, visit: (xPos: number, fPos: number, outPos: number) => void): void {
  const [channels, features] = [x[3]!, filter[3]!];
  const fStrides = stridesOf(filter);
  forEachWindow(x, filter, cx, (outPixel, taps) => {
    for (const { pixel, i, j } of taps) {
      for (let c = 0; c < channels; c++) {
        for (let f = 0; f < features; f++) visit(pixel * channels + c, i * fStrides[0]! + j * fStrides[1]! + c * features + f, outPixel * features + f);
      }
    }
  });
}

function requireShape(what: string, got: Shape, want: Shape): void {
  if (printShape(got) !== printShape(want)) throw new Error(`internal: ${what} has shape ${printShape(got)}, expected ${printShape(want)}`);
}

function conv2d([x, filter]: readonly Tensor[], cx: RuleContext): Tensor {
  if (filter!.shape[2] !== x!.shape[3]) {
    const [a, b] = [describe(x!, cx.inputTypes[0]!), describe(filter!, cx.inputTypes[1]!)];
    throw ftError("FT202", { op: cx.op, a, b, ka: x!.shape[3]!, kb: filter!.shape[2]! });
  }
  const out = tensor(windowShape(x!.shape, filter!.shape, filter!.shape[3]!, cx), x!.dtype);
  forEachConvProduct(x!.shape, filter!.shape, cx, (xPos, fPos, outPos) => addAt(out.data, outPos, x!.data[xPos]! * filter!.data[fPos]!));
  return out;
}

/** d conv2d(x, filter) / d x, pulled back from the output cotangent ct; x has like's shape. */
function conv2dGradInput([ct, filter, like]: readonly Tensor[], cx: RuleContext): Tensor {
  const dx = tensor(like!.shape, ct!.dtype);
  requireShape("conv2d_grad_input cotangent", ct!.shape, windowShape(like!.shape, filter!.shape, filter!.shape[3]!, cx));
  forEachConvProduct(like!.shape, filter!.shape, cx, (xPos, fPos, outPos) => addAt(dx.data, xPos, ct!.data[outPos]! * filter!.data[fPos]!));
  return dx;
}

/** d conv2d(x, filter) / d filter, pulled back from the output cotangent ct; filter has like's shape. */
function conv2dGradFilter([x, ct, like]: readonly Tensor[], cx: RuleContext): Tensor {
  const dfilter = tensor(like!.shape, ct!.dtype);
  requireShape("conv2d_grad_filter cotangent", ct!.shape, windowShape(x!.shape, like!.shape, like!.shape[3]!, cx));
  forEachConvProduct(x!.shape, like!.shape, cx, (xPos, fPos, outPos) => addAt(dfilter.data, fPos, x!.data[xPos]! * ct!.data[outPos]!));
  return dfilter;
}

/**
 * For each output of max_pool over x: its flat position and the flat input position of its
 * window's first maximum (row-major window order, as TensorFlow's argmax picks it).
 */
function forEachPoolMaximum(x: Tensor, cx: RuleContext, visit: (outPos: number, xPos: number) => void): void {
  const channels = x.shape[3]!;
  forEachWindow(x.shape, attrNumbers(cx, "window"), cx, (outPixel, taps) => {
    for (let c = 0; c < channels; c++) {
      let best = taps[0]!.pixel * channels + c;
      for (const { pixel } of taps.slice(1)) if (x.data[pixel * channels + c]! > x.data[best]!) best = pixel * channels + c;
      visit(outPixel * channels + c, best);
    }
  });
}

function maxPool([x]: readonly Tensor[], cx: RuleContext): Tensor {
  const out = tensor(windowShape(x!.shape, attrNumbers(cx, "window"), x!.shape[3]!, cx), x!.dtype);
  forEachPoolMaximum(x!, cx, (outPos, xPos) => (out.data[outPos] = x!.data[xPos]!));
  return out;
}

/** The cotangent of max_pool's input: each output's cotangent goes to its window's first maximum. */
function maxPoolGrad([x, ct]: readonly Tensor[], cx: RuleContext): Tensor {
  requireShape("max_pool_grad cotangent", ct!.shape, windowShape(x!.shape, attrNumbers(cx, "window"), x!.shape[3]!, cx));
  const dx = tensor(x!.shape, ct!.dtype);
  forEachPoolMaximum(x!, cx, (outPos, xPos) => addAt(dx.data, xPos, ct!.data[outPos]!));
  return dx;
}

/** Per window of max_pool over x: t at the window's first maximum (max_pool's tangent, max_pool_grad's transpose). */
function maxPoolPick([x, t]: readonly Tensor[], cx: RuleContext): Tensor {
  requireShape("max_pool_pick operand", t!.shape, x!.shape);
  const out = tensor(windowShape(x!.shape, attrNumbers(cx, "window"), x!.shape[3]!, cx), t!.dtype);
  forEachPoolMaximum(x!, cx, (outPos, xPos) => (out.data[outPos] = t!.data[xPos]!));
  return out;
}

export const windowRules: Record<string, TensorRule> = {
  conv2d,
  conv2d_grad_input: conv2dGradInput,
  conv2d_grad_filter: conv2dGradFilter,
  max_pool: maxPool,
  max_pool_grad: maxPoolGrad,
  max_pool_pick: maxPoolPick,
};
