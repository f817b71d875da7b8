/**
 * Convolution and pooling kernels that depend on the backend (the tfjs counterpart of
 * src/lower/onnx/windows.ts): what to use where a backend has no kernel (tfjs wasm has no
 * Conv2DBackpropFilter), a slow one (tfjs webgpu's filter gradient) or a wrong one
 * (test/differential/windows.test.ts found each of tfjs wasm's).
 */
import * as tf from "@tensorflow/tfjs";
import type { Tensor as TfTensor } from "@tensorflow/tfjs-core";
import { ftError } from "../errors/error.js";
import type { Attrs } from "../ir/primitives.js";
import type { Kernel } from "./executable.js";

type Window = { strides: [number, number]; padding: "same" | "valid" };

/** TensorFlow's SAME padding along one dim: [before, after]. */
function samePadding(input: number, output: number, kernel: number, stride: number): [number, number] {
  const total = Math.max((output - 1) * stride + kernel - input, 0);
  return [Math.floor(total / 2), total - Math.floor(total / 2)];
}

/**
 * conv2d. tfjs wasm's SAME padding (XNNPACK's) is wrong when the stride exceeds the kernel
 * (a 2x2 kernel at stride 3 gives zeros): there the padding is explicit and the window VALID.
 */
export function conv2dForm(attrs: Attrs, xShape: readonly number[], filterShape: readonly number[], outShape: readonly number[], backend: string): Kernel {
  const { strides, padding } = attrs as unknown as Window;
  if (backend !== "wasm" || padding === "valid") {
    return ([x, f]) => [tf.conv2d(x! as tf.Tensor4D, f! as tf.Tensor4D, strides, padding)];
  }
  const pads: [number, number][] = [[0, 0], samePadding(xShape[1]!, outShape[1]!, filterShape[0]!, strides[0]), samePadding(xShape[2]!, outShape[2]!, filterShape[1]!, strides[1]), [0, 0]];
  return ([x, f]) => {
    const padded = tf.pad(x!, pads) as tf.Tensor4D;
    const out = tf.conv2d(padded, f! as tf.Tensor4D, strides, "valid");
    padded.dispose();
    return [out];
  };
}

/**
 * The filter gradient of conv2d. Where the backend has the kernel, that; otherwise as a
 * convolution of the (padded) input with the output cotangent, dilated by the strides, over
 * the batch axis: dF[i,j,c,f] = sum over n,oh,ow of x[n, oh*sh+i, ow*sw+j, c] dy[n, oh, ow, f].
 * tfjs webgpu has the kernel, but a naive shader: on the H200 it took 2.3 ms a call against
 * Conv2D's 0.04 ms, 90% of a CNN round's GPU time (bench/tfjs-kernel-profile.ts); the
 * convolution form runs on its Conv2D shaders (8x faster on llvmpipe, docs/benchmarks.md "GPU").
 */
export function conv2dFilterGradient(attrs: Attrs, xShape: readonly number[], filterShape: readonly number[], backend: string): Kernel {
  const { strides, padding } = attrs as unknown as Window;
  const [kh, kw, inChannels, outChannels] = filterShape as [number, number, number, number];
  if (backend !== "webgpu" && tf.getKernel("Conv2DBackpropFilter", backend) !== undefined) {
    return ([x, dy]) => [
      tf.engine().runKernel("Conv2DBackpropFilter", { x: x!, dy: dy! }, {
        strides,
        pad: padding,
        dataFormat: "NHWC",
        filterShape: [kh, kw, inChannels, outChannels],
      }) as TfTensor,
    ];
  }
  const [, h, w] = xShape as [number, number, number, number];
  return ([x, dy]) => {
    const [, oh, ow] = dy!.shape as [number, number, number, number];
    const pads = padding === "same" ? [samePadding(h, oh, kh, strides[0]), samePadding(w, ow, kw, strides[1])] : [[0, 0], [0, 0]];
    const padded = tf.pad(x!, [[0, 0], pads[0] as [number, number], pads[1] as [number, number], [0, 0]]);
    const channelsFirst = tf.transpose(padded, [3, 1, 2, 0]) as tf.Tensor4D;
    const dyAsFilter = tf.transpose(dy!, [1, 2, 0, 3]) as tf.Tensor4D;
    const full = tf.conv2d(channelsFirst, dyAsFilter, 1, "valid", "NHWC", strides);
    const cropped = tf.slice(full, [0, 0, 0, 0], [inChannels, kh, kw, outChannels]);
    const out = tf.transpose(cropped, [1, 2, 0, 3]);
    [padded, channelsFirst, dyAsFilter, full, cropped].forEach((t) => t.dispose());
    return [out];
  };
}

/**
 * max_pool's gradient: the backend's MaxPoolGrad kernel where it is right. tfjs wasm's
 * routes the cotangent to the wrong pixels (even for 1x1 windows), so there it is composed:
 * for each offset of the window, in row-major order, the pixels under it that equal the
 * window's max and no earlier offset claimed take dy, spread back to their places by
 * interleaving zeros for the stride. The first max in the window wins, as on the cpu.
 */
export function maxPoolGradient(attrs: Attrs, xShape: readonly number[], backend: string): Kernel {
  const pool = attrs as unknown as PoolAttrs;
  const { window, strides, padding } = pool;
  if (backend !== "wasm") {
    return ([x, dy]) => {
      const y = tf.maxPool(x! as tf.Tensor4D, window, strides, padding);
      const out = tf.engine().runKernel("MaxPoolGrad", { dy: dy!, input: x!, output: y }, { filterSize: window, strides, pad: padding }) as TfTensor;
      y.dispose();
      return [out];
    };
  }
  const [n, h, w, c] = xShape as [number, number, number, number];
  const [sh, sw] = strides;
  return ([x, dy]) => [
    tf.tidy(() => {
      const windows = poolWindows(x!, pool, xShape);
      const { oh, ow, top, left, hp, wp } = windows;
      const zeros = tf.zerosLike(dy!);
      let dx = tf.zeros([n, hp, wp, c]);
      windows.firstMaxima((i, j, wins) => {
        const taken = tf.where(wins, dy!, zeros).reshape([n, oh, 1, ow, 1, c]);
        const spread = tf.pad(taken, [[0, 0], [0, 0], [0, sh - 1], [0, 0], [0, sw - 1], [0, 0]]).reshape([n, oh * sh, ow * sw, c]);
        const placed = tf.pad(spread, [[0, 0], [i, Math.max(0, hp - i - oh * sh)], [j, Math.max(0, wp - j - ow * sw)], [0, 0]]);
        dx = tf.add(dx, tf.slice(placed, [0, 0, 0, 0], [n, hp, wp, c]));
      });
      return tf.slice(dx, [0, top, left, 0], [n, h, w, c]);
    }),
  ];
}

/**
 * max_pool_pick: per window, t at the window's first maximum of x. tfjs has no gather by
 * argmax on every backend, so it is composed on all: the outputs whose first maximum sits
 * under each window offset take t from there.
 */
export function maxPoolPick(attrs: Attrs, xShape: readonly number[]): Kernel {
  return ([x, t]) => [
    tf.tidy(() => {
      const windows = poolWindows(x!, attrs as unknown as PoolAttrs, xShape);
      const paddedT = windows.pad(t!, 0);
      let picked: TfTensor = tf.zerosLike(windows.y);
      windows.firstMaxima((_i, _j, wins, under) => {
        picked = tf.where(wins, under(paddedT), picked);
      });
      return picked;
    }),
  ];
}

type PoolAttrs = Window & { window: [number, number] };

/**
 * The windows of max_pool over x (for use inside a tidy): its output y, output and padded
 * sizes, SAME padding, and `firstMaxima`, which visits the window offsets (i, j) in row-major
 * order with the outputs whose window's first maximum sits there (no earlier offset claimed
 * it) and a function giving a padded tensor's pixels at that offset, one per output.
 */
function poolWindows(x: TfTensor, attrs: PoolAttrs, xShape: readonly number[]) {
  const { window, strides, padding } = attrs;
  const [n, h, w, c] = xShape as [number, number, number, number];
  const [kh, kw] = window;
  const [sh, sw] = strides;
  const y = tf.maxPool(x as tf.Tensor4D, window, strides, padding);
  const [, oh, ow] = y.shape;
  const [top, bottom] = padding === "same" ? samePadding(h, oh, kh, sh) : [0, 0];
  const [left, right] = padding === "same" ? samePadding(w, ow, kw, sw) : [0, 0];
  const pad = (v: TfTensor, value: number) => tf.pad(v, [[0, 0], [top, bottom], [left, right], [0, 0]], value);
  // Padding never wins a window: SAME windows always hold a real pixel.
  const paddedX = pad(x, -Infinity);
  const firstMaxima = (visit: (i: number, j: number, wins: TfTensor, under: (padded: TfTensor) => TfTensor) => void) => {
    let claimed = tf.zerosLike(y).cast("bool");
    for (let i = 0; i < kh; i++) {
      for (let j = 0; j < kw; j++) {
        const under = (v: TfTensor) => tf.stridedSlice(v, [0, i, j, 0], [n, i + (oh - 1) * sh + 1, j + (ow - 1) * sw + 1, c], [1, sh, sw, 1]);
        const wins = tf.logicalAnd(tf.equal(under(paddedX), y), tf.logicalNot(claimed));
        claimed = tf.logicalOr(claimed, wins);
        visit(i, j, wins, under);
      }
    }
  };
  return { y, oh, ow, top, left, hp: h + top + bottom, wp: w + left + right, pad, firstMaxima };
}

