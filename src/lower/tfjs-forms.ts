/**
 * Kernel forms that depend on the backend: which shape of matmul a backend runs fast, and
 * what to use where a backend has no kernel or a rank limit (tfjs webgpu's shaders take at
 * most 6 dims). Convolution and pooling: tfjs-windows.ts.
 */
import * as tf from "@tensorflow/tfjs";
import type { Tensor as TfTensor } from "@tensorflow/tfjs-core";
import { ftError } from "../errors/error.js";
import type { Kernel, LoweringContext } from "./executable.js";

const product = (dims: readonly number[]) => dims.reduce((a, b) => a * b, 1);

/** numpy broadcasting of two dim lists, aligned from the right. */
function broadcastDims(a: readonly number[], b: readonly number[]): number[] {
  const rank = Math.max(a.length, b.length);
  return Array.from({ length: rank }, (_, i) => Math.max(a[a.length - rank + i] ?? 1, b[b.length - rank + i] ?? 1));
}

/**
 * Backends whose kernels want one large call for all clients: native TensorFlow, and WebGPU,
 * where each kernel is a GPU dispatch (a launch and a pipeline) and tensors live on the GPU,
 * so per-client calls or reads back to JavaScript only add launches and transfers.
 */
export const runsBatched = (backend: string) => backend === "tensorflow" || backend === "webgpu";

/** Backends whose batched and transposed matmuls are slow loops: there, everything is plain 2-D. */
const prefersPlainMatmul = (backend: string) => backend === "wasm" || backend === "cpu";

/** One 2-D matmul per batch element, restacked. */
function perSliceMatmul(a: tf.Tensor3D, b: tf.Tensor3D): tf.Tensor3D {
  const as = tf.unstack(a) as tf.Tensor2D[];
  const bs = tf.unstack(b) as tf.Tensor2D[];
  const products = as.map((x, i) => tf.matMul(x, bs[i]!));
  const out = tf.stack(products) as tf.Tensor3D;
  [...as, ...bs, ...products].forEach((t) => t.dispose());
  return out;
}

/**
 * matmul (numpy semantics) in the form the backend runs fastest: plain 2-D; rows folded
 * together when the right operand is one matrix (the client axis becomes rows); batched
 * kernels or one 2-D call per batch element otherwise.
 */
export function matmulForm(aShape: readonly number[], bShape: readonly number[], outShape: readonly number[], backend: string, dtype: string): Kernel {
  const float = matmulFloat(aShape, bShape, outShape, backend);
  if (dtype === "float32" || backend !== "wasm") return float;
  // tfjs wasm's BatchMatMul takes float32 only: int32 products go through float32 (exact below 2^24).
  return (ins) => {
    const floats = ins.map((t) => tf.cast(t, "float32"));
    const [product] = float(floats);
    const out = tf.cast(product!, "int32");
    [...floats, product!].forEach((t) => t.dispose());
    return [out];
  };
}

function matmulFloat(aShape: readonly number[], bShape: readonly number[], outShape: readonly number[], backend: string): Kernel {
  const a2 = aShape.length === 1 ? [1, aShape[0]!] : aShape;
  const b2 = bShape.length === 1 ? [bShape[0]!, 1] : bShape;
  const [n, k] = a2.slice(-2) as [number, number];
  const m = b2[b2.length - 1]!;
  const aBatch = a2.slice(0, -2);
  const bBatch = b2.slice(0, -2);
  const reshaped = (x: TfTensor, shape: readonly number[]) => (x.shape.join() === shape.join() ? x : x.reshape(shape as number[]));
  const finish = (out: TfTensor, ...scratch: TfTensor[]) => {
    const shaped = reshaped(out, outShape);
    for (const t of [out, ...scratch]) if (t !== shaped) t.dispose();
    return [shaped];
  };
  if (bBatch.length === 0) {
    // [..., n, k] @ [k, m]: every row meets the same matrix.
    return ([a, b]) => {
      const rows = reshaped(a!, [product(aBatch) * n, k]);
      const bm = reshaped(b!, [k, m]);
      const out = tf.matMul(rows as tf.Tensor2D, bm as tf.Tensor2D);
      return finish(out, ...[rows, bm].filter((t) => t !== a && t !== b));
    };
  }
  const batch = broadcastDims(aBatch, bBatch);
  const size = product(batch);
  return ([a, b]) => {
    const ra = reshaped(a!, a2);
    const rb = reshaped(b!, b2);
    const fa = broadcastTensor(ra, [...batch, n, k], backend);
    const fb = broadcastTensor(rb, [...batch, k, m], backend);
    const a3 = fa.reshape([size, n, k]) as tf.Tensor3D;
    const b3 = fb.reshape([size, k, m]) as tf.Tensor3D;
    const out = prefersPlainMatmul(backend) ? perSliceMatmul(a3, b3) : tf.matMul(a3, b3);
    return finish(out, ...[ra, rb].filter((t) => t !== a && t !== b), fa, fb, a3, b3);
  };
}

/** softmax-like functions, which tfjs runs only over the last axis: transpose around them otherwise. */
export function softmaxAlong(f: (x: TfTensor) => TfTensor, axis: number, rank: number): Kernel {
  const at = axis < 0 ? axis + rank : axis;
  if (at === rank - 1) return ([x]) => [f(x!)];
  const perm = [...Array(rank).keys()];
  [perm[at], perm[rank - 1]] = [rank - 1, at];
  return ([x]) => {
    const moved = tf.transpose(x!, perm);
    const applied = f(moved);
    const out = tf.transpose(applied, perm);
    moved.dispose();
    applied.dispose();
    return [out];
  };
}

/**
 * The most dims a backend's elementwise kernels take: tfjs wasm's (XNNPACK's) return garbage
 * beyond 6; tfjs webgpu's shaders index with vectors of at most 6 (its Transpose throws "GPU
 * for rank 7 is not yet supported").
 */
const ELEMENTWISE_MAX_RANK: Readonly<Record<string, number>> = { wasm: 6, webgpu: 6 };

/** Kernels whose rank limit on a backend is below its elementwise one: tfjs webgpu's Select ("Where for rank 5 is not yet supported"). */
export const KERNEL_MAX_RANK: Readonly<Record<string, Readonly<Record<string, number>>>> = { Select: { webgpu: 4 } };

/**
 * A kernel on operands of rank above what the backend takes (by default its elementwise
 * limit): adjacent dims that every operand either has in full or broadcasts from 1 alike are
 * merged (a reshape, no copy) until the rank fits, and the result is reshaped back. Client
 * batching adds a dim to every member, so a rank-6 member reaches rank 7.
 */
export function withinKernelRank(kernel: Kernel, inShapes: readonly (readonly number[])[], outShape: readonly number[], backend: string, maxRank = ELEMENTWISE_MAX_RANK[backend] ?? Infinity): Kernel {
  if (outShape.length <= maxRank) return kernel;
  const rank = outShape.length;
  const aligned = inShapes.map((s) => [...Array<number>(rank - s.length).fill(1), ...s]);
  // Per operand and dim: does it have the dim in full? (A dim of size 1 in the output fits either way.)
  const full = (shape: readonly number[], d: number) => outShape[d] === 1 || shape[d] === outShape[d];
  const unit = (shape: readonly number[], d: number) => outShape[d] === 1 || shape[d] === 1;
  const groups: number[][] = outShape.map((_, d) => [d]);
  for (let g = 0; g < groups.length - 1 && groups.length > maxRank; ) {
    const [first, next] = [groups[g]!, groups[g + 1]!];
    const dims = [...first, ...next];
    const mergeable = aligned.every((s) => dims.every((d) => full(s, d)) || dims.every((d) => unit(s, d)));
    if (mergeable) groups.splice(g, 2, dims);
    else g++;
  }
  if (groups.length > maxRank) {
    throw ftError("FT301", {
      backend,
      why: `its kernels here take at most ${maxRank} dims, and operands of shapes ${inShapes.map((s) => `[${s.join(",")}]`).join(", ")} cannot be merged to fit; use the cpu backend for this program`,
    });
  }
  const merged = aligned.map((s) => groups.map((dims) => product(dims.map((d) => s[d]!))));
  return (ins) => {
    const reshaped = ins.map((t, i) => t.reshape(merged[i]!));
    const [out] = kernel(reshaped);
    const result = out!.reshape(outShape as number[]);
    [...reshaped, out!].forEach((t) => t.dispose());
    return [result];
  };
}

/**
 * tf.broadcastTo in a form the backend runs. tfjs webgpu's Tile, which broadcastTo calls,
 * reads rank-5 and larger inputs back to JavaScript synchronously, which needs a browser's
 * OffscreenCanvas: there it is an addition to zeros (logical or with false for bool), whose
 * kernel broadcasts on the GPU (up to rank 6, merged dims beyond).
 */
export function broadcastTensor(x: tf.Tensor, target: readonly number[], backend: string): tf.Tensor {
  if (backend !== "webgpu" || target.length <= 4) return tf.broadcastTo(x, target as number[]);
  const zeros = tf.zeros(target as number[], x.dtype);
  const add: Kernel = x.dtype === "bool" ? ([a, b]) => [tf.logicalOr(a!, b!)] : ([a, b]) => [tf.add(a!, b!)];
  const [out] = withinKernelRank(add, [x.shape, target], target, backend)([x, zeros]);
  zeros.dispose();
  return out!;
}

/**
 * tfjs webgpu keeps int32 and bool data as 32-bit integers. Its general Transpose shader (any
 * permutation but a 2-D [1,0]) does not compile for them ("expected 'f32', got 'i32'"), and
 * its reductions over other than the innermost axes transpose internally; its Cast to float32
 * only relabels the integers, which that shader then meets as "float32". A failed shader also
 * spoils every kernel queued with it. So on webgpu: casts to float32 convert, integer and bool
 * transposes go through float32 exactly, and integer reductions move their axes innermost.
 */
const integerOnWebGpu = (dtype: string, backend: string) => backend === "webgpu" && dtype !== "float32";

/** float32 data converted by Add's kernel, which reads integers as what they are (see above). */
function convertedToFloat(x: tf.Tensor): tf.Tensor {
  return tf.tidy(() => tf.add(tf.cast(x, "float32"), tf.scalar(0)));
}

/** A cast: on webgpu, one from int32 or bool to float32 converts the data (see above). */
export function castForm(from: string, to: string, backend: string): Kernel {
  if (to === "float32" && integerOnWebGpu(from, backend)) return ([x]) => [convertedToFloat(x!)];
  return ([x]) => [tf.cast(x!, to as tf.DataType)];
}

/**
 * transpose. Rank 0 and 1 are the identity (tfjs webgpu's rank-1 shader does not compile).
 * int32 and bool on webgpu (see above) move as float32: bool as 0 and 1, int32 as its high and
 * low 16 bits, each exact in float32.
 */
export function transposeForm(perm: readonly number[], dtype: string, backend: string): Kernel {
  if (perm.length <= 1) return ([x]) => [tf.clone(x!)];
  const maxRank = ELEMENTWISE_MAX_RANK[backend] ?? Infinity;
  if (perm.length > maxRank) return mergedTranspose(perm, dtype, backend, maxRank);
  const transpose = (x: tf.Tensor) => tf.engine().runKernel("Transpose", { x }, { perm: perm as number[] }) as tf.Tensor;
  const sharedProgram = perm.length === 2 && perm[0] === 1;
  if (!integerOnWebGpu(dtype, backend) || sharedProgram) return ([x]) => [transpose(x!)];
  const moveAsFloat = (x: tf.Tensor, to: tf.DataType) => {
    const floats = convertedToFloat(x);
    const moved = transpose(floats);
    const out = to === "bool" ? tf.notEqual(moved, 0) : tf.cast(moved, to);
    [floats, moved].forEach((t) => t.dispose());
    return out;
  };
  if (dtype === "bool") return ([x]) => [moveAsFloat(x!, "bool")];
  return ([x]) => [
    tf.tidy(() => {
      const high = tf.floorDiv(x!, tf.scalar(65536, "int32"));
      const low = tf.sub(x!, tf.mul(high, tf.scalar(65536, "int32")));
      return tf.add(tf.mul(moveAsFloat(high, "int32"), tf.scalar(65536, "int32")), moveAsFloat(low, "int32"));
    }),
  ];
}

/**
 * transposeForm above the backend's rank limit (tfjs webgpu's Transpose shader takes 6 dims):
 * unit dims go, since they move nowhere, and input dims that the permutation keeps adjacent
 * merge into one (reshapes, no copy), until the rank fits.
 */
function mergedTranspose(perm: readonly number[], dtype: string, backend: string, maxRank: number): Kernel {
  return ([x]) => {
    const shape = x!.shape;
    const sized = [...shape.keys()].filter((d) => shape[d] !== 1);
    const position = (d: number) => sized.indexOf(d);
    const groups: number[][] = [];
    for (const d of perm.filter((d) => shape[d] !== 1)) {
      const last = groups[groups.length - 1];
      if (last !== undefined && position(last[last.length - 1]!) + 1 === position(d)) last.push(d);
      else groups.push([d]);
    }
    if (groups.length > maxRank) {
      throw ftError("FT301", { backend, why: `its transposes here take at most ${maxRank} dims, and permuting [${perm.join(",")}] of shape [${shape.join(",")}] moves ${groups.length} runs of dims apart; use the cpu backend for this program` });
    }
    const inputOrder = [...groups].sort((a, b) => a[0]! - b[0]!);
    const merged = x!.reshape(inputOrder.map((g) => product(g.map((d) => shape[d]!))));
    const [moved] = transposeForm(groups.map((g) => inputOrder.indexOf(g)), dtype, backend)([merged]);
    const out = moved!.reshape(perm.map((d) => shape[d]!));
    [merged, moved!].forEach((t) => t !== out && t.dispose());
    return [out];
  };
}

/**
 * A reduction over `axes` of a rank-`rank` operand to `outShape`. On webgpu an int32 or bool
 * operand's axes move innermost first (see above), where tfjs reduces without transposing.
 * Above the backend's rank limit (tfjs webgpu's reduce shaders take 6 dims, as its elementwise
 * ones do), adjacent dims that are all reduced or all kept merge first (a reshape, no copy).
 */
export function reductionForm(reduce: (x: tf.Tensor, axes: number[]) => tf.Tensor, axes: readonly number[], rank: number, outShape: readonly number[], dtype: string, backend: string): Kernel {
  const maxRank = ELEMENTWISE_MAX_RANK[backend] ?? Infinity;
  if (rank > maxRank) return mergedReduction(reduce, axes, rank, outShape, dtype, backend, maxRank);
  const innermost = axes.every((a) => a >= rank - axes.length);
  if (!integerOnWebGpu(dtype, backend) || innermost) return ([x]) => [reduce(x!, [...axes])];
  const kept = [...Array(rank).keys()].filter((d) => !axes.includes(d));
  const move = transposeForm([...kept, ...axes], dtype, backend);
  const last = axes.map((_, i) => kept.length + i);
  return ([x]) => {
    const [moved] = move([x!]);
    const reduced = reduce(moved!, last);
    const out = reduced.reshape(outShape as number[]);
    [moved!, reduced].forEach((t) => t !== out && t.dispose());
    return [out];
  };
}

/** reductionForm on the operand with each run of adjacent reduced (or kept) dims merged into one. */
function mergedReduction(reduce: (x: tf.Tensor, axes: number[]) => tf.Tensor, axes: readonly number[], rank: number, outShape: readonly number[], dtype: string, backend: string, maxRank: number): Kernel {
  const runs: number[][] = [];
  for (let d = 0; d < rank; d++) {
    const last = runs[runs.length - 1];
    if (last !== undefined && axes.includes(last[0]!) === axes.includes(d)) last.push(d);
    else runs.push([d]);
  }
  if (runs.length > maxRank) {
    throw ftError("FT301", { backend, why: `its reductions here take at most ${maxRank} dims, and reducing axes [${axes.join(",")}] of a rank-${rank} operand leaves ${runs.length} runs of reduced and kept dims that cannot be merged to fit; use the cpu backend for this program` });
  }
  const mergedAxes = runs.flatMap((run, i) => (axes.includes(run[0]!) ? [i] : []));
  const inner = reductionForm(reduce, mergedAxes, runs.length, [product(outShape)], dtype, backend);
  return ([x]) => {
    const merged = x!.reshape(runs.map((run) => product(run.map((d) => x!.shape[d]!))));
    const [reduced] = inner([merged]);
    const out = reduced!.reshape(outShape as number[]);
    [merged, reduced!].forEach((t) => t !== out && t.dispose());
    return [out];
  };
}

/**
 * x split along axis 0. tfjs wasm's Unpack slices with a JavaScript kernel that copies the
 * whole input once per slice (readSync), quadratic in the number of slices: 30 batches of a
 * client's data take 170 ms that way. Reading the data once and uploading each part takes
 * 7 ms, so the JavaScript backends do that; native TensorFlow and WebGPU unstack on their
 * device, without a round trip through JavaScript memory.
 */
export function unstack(x: TfTensor, backend: string): TfTensor[] {
  if (runsBatched(backend)) return tf.unstack(x);
  const [count, ...member] = x.shape;
  const size = product(member);
  const data = x.dataSync();
  return Array.from({ length: count! }, (_, i) => tf.tensor(data.subarray(i * size, (i + 1) * size) as Float32Array, member, x.dtype));
}

/**
 * where() on bool branches for tfjs wasm, whose Select reads bool operands as float32:
 * (c and t) or (not c and e), with the operands broadcast by the logical kernels.
 */
export const boolSelect: Kernel = ([c, t, e]) => {
  const notC = tf.logicalNot(c!);
  const whenTrue = tf.logicalAnd(c!, t!);
  const whenFalse = tf.logicalAnd(notC, e!);
  const out = tf.logicalOr(whenTrue, whenFalse);
  [notC, whenTrue, whenFalse].forEach((x) => x.dispose());
  return [out];
};

/**
 * One-hot rows (float32) of int32 indices, a zero row for an index outside [0, depth). tfjs
 * wasm's OneHot writes outside its output for such indices (corrupting the wasm memory) and
 * int32 data whatever dtype it is asked for, so there the rows are `index == 0..depth-1`.
 */
export function oneHotForm(depth: number, ctx: LoweringContext): Kernel {
  if (ctx.backend !== "wasm") {
    return ([x]) => [tf.oneHot(x! as tf.Tensor1D, depth, 1, 0, "float32")];
  }
  const classes = ctx.own(tf.range(0, depth, 1, "int32"));
  return ([x]) => {
    const column = tf.expandDims(x!, -1);
    const hits = tf.equal(column, classes);
    const out = tf.cast(hits, "float32");
    [column, hits].forEach((t) => t.dispose());
    return [out];
  };
}
