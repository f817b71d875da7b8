/**
 * A small decoder-only transformer (GPT-style, pre-norm) for next-character prediction on the
 * State of the Union set (src/lib/data/sotu.ts), the attention model of FedJAX's and TFF's
 * Shakespeare tasks at toy size: token embedding by lookup (take) plus a learned positional
 * embedding, `blocks` blocks of causal multi-head self-attention and a ReLU feed-forward layer,
 * each behind a layer norm and added to the residual stream, then a final layer norm and a
 * softmax layer over the vocabulary.
 *
 * The data gives one label per window, the character after it, so the logits are those of the
 * window's last position; the causal mask still matters from the second block on, where each
 * position carries only what precedes it. The blocks' weights are stacked on a leading axis
 * (as flax's scanned layers store them) and sliced per block when tracing.
 */
import { add, mul, relu } from "../../front/elementwise.js";
import { einsum } from "../../front/einsum.js";
import { constant } from "../../front/constants.js";
import { layerNorm, softmax } from "../../front/nn.js";
import { take } from "../../front/sequence-ops.js";
import { f32 } from "../../front/specs.js";
import { matmul, reshape, slice, transpose } from "../../front/tensor-ops.js";
import type { Dim, Place, Tensor, ValueOf } from "../../../types/tensor.js";
import { ftError } from "../../errors/error.js";
import { CHARACTER_VOCABULARY_SIZE } from "../data/sotu.js";
import type { Rng } from "../random.js";
import { defineModel, denseKernel, glorotUniform, zerosParam, type HostParam, type Model } from "./model.js";

type Vocabulary = typeof CHARACTER_VOCABULARY_SIZE;

/**
 * transformerModel's options: the window length (it must match the data's), the model width,
 * attention heads, blocks and the feed-forward width.
 *
 * @example
 * const model = transformerModel({ width: 64, heads: 4, blocks: 2 } satisfies TransformerOptions<80>);
 */
export interface TransformerOptions<L extends number> {
  /** Characters per window; must match the data's (default 80, loadSotuCharacters's default). */
  readonly sequenceLength?: L;
  /** Width of the residual stream (default 32). */
  readonly width?: number;
  /** Attention heads; must divide width (default 2). */
  readonly heads?: number;
  /** Transformer blocks (default 2). */
  readonly blocks?: number;
  /** Units of each block's feed-forward layer (default 4 * width). */
  readonly hidden?: number;
}

function transformerSpecs(length: number, width: number, blocks: number, hidden: number) {
  const matrices = (rows: number, columns: number) => f32([blocks, rows, columns]);
  const vectors = (size: number) => f32([blocks, size]);
  return {
    embedding: f32([CHARACTER_VOCABULARY_SIZE, width]),
    positions: f32([length, width]),
    attentionGain: vectors(width),
    attentionBias: vectors(width),
    query: matrices(width, width),
    key: matrices(width, width),
    value: matrices(width, width),
    projection: matrices(width, width),
    feedForwardGain: vectors(width),
    feedForwardBias: vectors(width),
    hidden: matrices(width, hidden),
    hiddenBias: vectors(hidden),
    back: matrices(hidden, width),
    backBias: vectors(width),
    finalGain: f32([width]),
    finalBias: f32([width]),
    out: f32([width, CHARACTER_VOCABULARY_SIZE]),
    outBias: f32([CHARACTER_VOCABULARY_SIZE]),
  };
}
/**
 * transformerModel's parameter specs: embeddings, and per block its attention, layer norms and
 * feed-forward weights.
 *
 * @example
 * const init: HostParams<TransformerParams> = transformerModel().init(Rng.fromSeed(0));
 */
export type TransformerParams = ReturnType<typeof transformerSpecs>;
type Params = Place<ValueOf<TransformerParams>, "member">;
type Matrices = Tensor<[number, number, number], "float32", "member">;
type Vectors = Tensor<[number, number], "float32", "member">;
type Stream = Tensor<["B", number, number], "float32", "member">;
type Row = Tensor<["B", number], "float32", "member">;
/** Per head: [B, L, heads, perHead] for the stream, [B, heads, perHead] for one position. */
type StreamHeads = Tensor<["B", number, number, number], "float32", "member">;
type RowHeads = Tensor<["B", number, number], "float32", "member">;

/** Block i's matrix of a stacked [blocks, rows, columns] weight. */
function matrixOf(w: Matrices, i: number) {
  const [, rows, columns] = w.shape as [number, number, number];
  return reshape(slice(w, [i, 0, 0], [1, -1, -1]), [rows, columns]);
}

/** Block i's vector of a stacked [blocks, size] weight. */
function vectorOf(w: Vectors, i: number) {
  return reshape(slice(w, [i, 0], [1, -1]), [w.shape[1] as number]);
}

/** 0 where a query may see a key (at or before it), -1e9 after it: added to the scores before softmax. */
function causalMask(length: number) {
  return constant(Array.from({ length }, (_, q) => Array.from({ length }, (_, k) => (k <= q ? 0 : -1e9))));
}

/** x [..., width] times block i's weight w, split into heads: [..., heads, width / heads]. */
function projectHeads(x: Stream | Row, w: Matrices, i: number, heads: number) {
  const width = x.shape.at(-1) as number;
  return reshape(matmul(x as Stream, matrixOf(w, i)), [...x.shape.slice(0, -1), heads, width / heads] as Dim[]);
}

/** The stream's projection by w as [B, heads, L, perHead]. */
function headsFirst(x: Stream, w: Matrices, i: number, heads: number) {
  return transpose(projectHeads(x, w, i, heads) as StreamHeads, [0, 2, 1, 3]);
}

/** Causal multi-head self-attention of x [B, L, width]: every position attends to itself and those before it. */
function attention(p: Params, i: number, x: Stream, heads: number): Stream {
  const [, length, width] = x.shape as [unknown, number, number];
  const [q, k, v] = [headsFirst(x, p.query, i, heads), headsFirst(x, p.key, i, heads), headsFirst(x, p.value, i, heads)];
  const scores = add(mul(einsum("bhqd,bhkd->bhqk", q, k), Math.sqrt(heads / width)), causalMask(length));
  const mixed = einsum("bhqk,bhkd->bhqd", softmax(scores), v);
  return matmul(reshape(transpose(mixed, [0, 2, 1, 3]), ["B", length, width]), matrixOf(p.projection, i));
}

/** x [B, L, width] at its last position, [B, width], by lookup (slice's gradient needs every dim known, and B is not). */
function lastPosition(x: Stream): Row {
  return take(x, constant((x.shape[1] as number) - 1, "int32"), 1);
}

/** The same attention for the last position's query only [B, width] (it sees every position: no mask). */
function lastAttention(p: Params, i: number, x: Stream, heads: number): Row {
  const width = x.shape[2] as number;
  const q = projectHeads(lastPosition(x), p.query, i, heads) as RowHeads;
  const [k, v] = [headsFirst(x, p.key, i, heads), headsFirst(x, p.value, i, heads)];
  const scores = mul(einsum("bhd,bhkd->bhk", q, k), Math.sqrt(heads / width));
  const mixed = einsum("bhk,bhkd->bhd", softmax(scores), v);
  return matmul(reshape(mixed, ["B", width]), matrixOf(p.projection, i));
}

/** Block i's feed-forward layer behind its layer norm, added to the stream. */
function feedForward<X extends Stream | Row>(p: Params, i: number, x: X): X {
  const h = x as Stream;
  const inner = relu(add(matmul(layerNorm(h, vectorOf(p.feedForwardGain, i), vectorOf(p.feedForwardBias, i)), matrixOf(p.hidden, i)), vectorOf(p.hiddenBias, i)));
  return add(h, add(matmul(inner, matrixOf(p.back, i)), vectorOf(p.backBias, i))) as X;
}

const attentionNorm = (p: Params, i: number, x: Stream) => layerNorm(x, vectorOf(p.attentionGain, i), vectorOf(p.attentionBias, i));

/** The residual stream [B, L, width] after the first `blocks` blocks: position t has seen the ids up to t only. */
export function transformerStates(p: Params, ids: Tensor<["B", number], "int32", "member">, heads: number, blocks = p.query.shape[0] as number): Stream {
  let h: Stream = add(take(p.embedding, ids), p.positions);
  for (let i = 0; i < blocks; i++) h = feedForward(p, i, add(h, attention(p, i, attentionNorm(p, i, h), heads)));
  return h;
}

/**
 * Logits [B, vocabulary] of the character after each window of ids [B, L]: those of the last
 * position, whose last block needs its own query and feed-forward only (the other positions'
 * keys and values), so it is computed for that position alone.
 */
export function transformerLogits(p: Params, ids: Tensor<["B", number], "int32", "member">, heads: number) {
  const blocks = p.query.shape[0] as number;
  const h = transformerStates(p, ids, heads, blocks - 1);
  const out = feedForward(p, blocks - 1, add(lastPosition(h), lastAttention(p, blocks - 1, attentionNorm(p, blocks - 1, h), heads)));
  return add(matmul(layerNorm(out, p.finalGain, p.finalBias), p.out), p.outBias);
}

const onesParam = (shape: number[]): HostParam => {
  const param = zerosParam(shape);
  param.data.fill(1);
  return param;
};

/** Glorot-uniform [blocks, rows, columns] weights, each block's matrix with its own fans. */
const stackedKernel = (rng: Rng, blocks: number, rows: number, columns: number) => glorotUniform(rng, [blocks, rows, columns], rows, columns);

/**
 * The model for windows of `sequenceLength` character ids (int32 features).
 *
 * @example
 * import { fedAvgProgram, transformerModel } from "fedtensor/lib";
 * const model = transformerModel({ sequenceLength: 80, width: 32, heads: 2, blocks: 2 });
 * const round = fedAvgProgram(model);
 */
export function transformerModel<const L extends number = 80>(
  options: TransformerOptions<L> = {},
): Model<TransformerParams, [L], Vocabulary, "int32"> {
  const { sequenceLength = 80 as L, width = 32, heads = 2, blocks = 2 } = options;
  const hidden = options.hidden ?? 4 * width;
  if (!(width % heads === 0 && heads > 0)) throw ftError("FT305", { option: "transformer heads", why: `${heads} heads do not divide width ${width}` });
  for (const [name, n] of Object.entries({ sequenceLength, width, blocks, hidden })) {
    if (!(Number.isInteger(n) && n > 0)) throw ftError("FT305", { option: `transformer ${name}`, why: `${n} is not a positive integer` });
  }
  return defineModel<TransformerParams, [L], Vocabulary, "int32">({
    name: `transformer${sequenceLength}`,
    params: transformerSpecs(sequenceLength, width, blocks, hidden),
    inputShape: [sequenceLength],
    classes: CHARACTER_VOCABULARY_SIZE,
    inputDType: "int32",
    logits: (p, ids) => transformerLogits(p, ids, heads),
    init: (rng) => ({
      embedding: denseKernel(rng.fork("embedding"), CHARACTER_VOCABULARY_SIZE, width),
      positions: denseKernel(rng.fork("positions"), sequenceLength, width),
      attentionGain: onesParam([blocks, width]),
      attentionBias: zerosParam([blocks, width]),
      query: stackedKernel(rng.fork("query"), blocks, width, width),
      key: stackedKernel(rng.fork("key"), blocks, width, width),
      value: stackedKernel(rng.fork("value"), blocks, width, width),
      projection: stackedKernel(rng.fork("projection"), blocks, width, width),
      feedForwardGain: onesParam([blocks, width]),
      feedForwardBias: zerosParam([blocks, width]),
      hidden: stackedKernel(rng.fork("hidden"), blocks, width, hidden),
      hiddenBias: zerosParam([blocks, hidden]),
      back: stackedKernel(rng.fork("back"), blocks, hidden, width),
      backBias: zerosParam([blocks, width]),
      finalGain: onesParam([width]),
      finalBias: zerosParam([width]),
      out: denseKernel(rng.fork("out"), width, CHARACTER_VOCABULARY_SIZE),
      outBias: zerosParam([CHARACTER_VOCABULARY_SIZE]),
    }),
  });
}
