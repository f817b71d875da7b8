/**
 * A character LSTM for next-character prediction on the State of the Union set
 * (src/lib/data/sotu.ts), after FedJAX's Shakespeare model: each window of character ids is
 * embedded (take: a lookup, whose gradient is a scatter-add), one LSTM layer runs over the
 * window with scan, and a dense layer scores the vocabulary from the last hidden state.
 *
 * FedJAX stacks two LSTM layers of 256 units and predicts every position; here one layer of
 * 128 units (default) predicts the character after the window, as the data set's examples
 * are built: 83,296 parameters, so a round of 10 presidents x 10 steps of 8 windows takes
 * about half a second on two CPU cores (docs/benchmarks.md). `hidden` and `embedding` are
 * options.
 *
 * The gates are laid out as PyTorch's nn.LSTM lays them, [input, forget, cell, output]
 * along the 4H axis, so its weights map one to one (the kernels transposed). The input
 * projection of all steps is one matmul before the loop; only the recurrent product runs
 * per step. The forget gate's bias starts at 1 (Keras's unit_forget_bias; Haiku adds 1 in
 * the cell): the carry is kept at first instead of forgotten.
 */
import { add, mul, sigmoid, tanh } from "../../front/elementwise.js";
import { scan } from "../../front/loops.js";
import { take } from "../../front/sequence-ops.js";
import { matmul, reshape, slice, transpose, zerosLike } from "../../front/tensor-ops.js";
import { f32 } from "../../front/specs.js";
import type { Place, Tensor, ValueOf } from "../../../types/tensor.js";
import { CHARACTER_VOCABULARY_SIZE } from "../data/sotu.js";
import { defineModel, denseKernel, zerosParam, type HostParam, type Model } from "./model.js";

type Vocabulary = typeof CHARACTER_VOCABULARY_SIZE;

/**
 * lstmModel's options: the window length (it must match the data's), the embedding width and the
 * LSTM's hidden width.
 *
 * @example
 * const model = lstmModel({ sequenceLength: 80, embedding: 8, hidden: 256 } satisfies LstmModelOptions<80>);
 */
export interface LstmModelOptions<L extends number> {
  /** Characters per window; must match the data's (default 80, loadSotuCharacters's default). */
  readonly sequenceLength?: L;
  /** Width of a character's embedding (default 8, as FedJAX's). */
  readonly embedding?: number;
  /** Units of the LSTM layer (default 128). */
  readonly hidden?: number;
}

function lstmSpecs(embedding: number, hidden: number) {
  return {
    embedding: f32([CHARACTER_VOCABULARY_SIZE, embedding]),
    /** [E, 4H]: the inputs' share of the four gates. */
    inputKernel: f32([embedding, 4 * hidden]),
    /** [H, 4H]: the previous hidden state's share. */
    recurrentKernel: f32([hidden, 4 * hidden]),
    /** [4H]: the gates' biases (PyTorch's bias_ih + bias_hh). */
    bias: f32([4 * hidden]),
    out: f32([hidden, CHARACTER_VOCABULARY_SIZE]),
    outBias: f32([CHARACTER_VOCABULARY_SIZE]),
  };
}
/**
 * lstmModel's parameter specs: the embedding, the LSTM's kernels and bias, and the output layer.
 *
 * @example
 * const init: HostParams<LstmParams> = lstmModel().init(Rng.fromSeed(0));
 */
export type LstmParams = ReturnType<typeof lstmSpecs>;

type State = Tensor<["B", number], "float32", "member">;

function lstmLogits(
  hidden: number,
  p: Place<ValueOf<LstmParams>, "member">,
  ids: Tensor<["B", number], "int32", "member">,
): Tensor<["B", Vocabulary], "float32", "member"> {
  // [L, B, 4H]: every step's input projection in one product, time first for scan.
  const projected = add(matmul(transpose(take(p.embedding, ids), [1, 0, 2]), p.inputKernel), p.bias) as Tensor<[number, "B", number], "float32", "member">;
  // Slices and reshapes of the symbolic batch dim type it as number: they are given the state's type.
  const gate = (gates: State, k: number): State => slice(gates, [0, k * hidden], [-1, hidden]) as never;
  const zeros: State = zerosLike(reshape(slice(projected, [0, 0, 0], [1, -1, hidden]), [-1, hidden])) as never;
  const [final] = scan({ h: zeros, c: zeros }, projected, ({ h, c }, x) => {
    const gates = add(x, matmul(h, p.recurrentKernel)) as State;
    const cell = add(mul(sigmoid(gate(gates, 1)), c), mul(sigmoid(gate(gates, 0)), tanh(gate(gates, 2)))) as State;
    return [{ h: mul(sigmoid(gate(gates, 3)), tanh(cell)) as State, c: cell }, undefined] as const;
  });
  return add(matmul(final.h, p.out), p.outBias);
}

/** The gates' biases: 0, but 1 for the forget gate (the second quarter). */
function gateBias(hidden: number): HostParam {
  const bias = zerosParam([4 * hidden]);
  bias.data.fill(1, hidden, 2 * hidden);
  return bias;
}

/**
 * The model for windows of `sequenceLength` character ids (int32 features).
 *
 * @example
 * import { fedAvgProgram, lstmModel } from "fedtensor/lib";
 * const round = fedAvgProgram(lstmModel({ sequenceLength: 80, hidden: 128 }));
 */
export function lstmModel<const L extends number = 80>(options: LstmModelOptions<L> = {}): Model<LstmParams, [L], Vocabulary, "int32"> {
  const { sequenceLength = 80 as L, embedding = 8, hidden = 128 } = options;
  return defineModel<LstmParams, [L], Vocabulary, "int32">({
    name: `lstm${hidden}`,
    params: lstmSpecs(embedding, hidden),
    inputShape: [sequenceLength],
    classes: CHARACTER_VOCABULARY_SIZE,
    inputDType: "int32",
    logits: (p, ids) => lstmLogits(hidden, p, ids),
    init: (rng) => ({
      embedding: denseKernel(rng.fork("embedding"), CHARACTER_VOCABULARY_SIZE, embedding),
      inputKernel: denseKernel(rng.fork("inputKernel"), embedding, 4 * hidden),
      recurrentKernel: denseKernel(rng.fork("recurrentKernel"), hidden, 4 * hidden),
      bias: gateBias(hidden),
      out: denseKernel(rng.fork("out"), hidden, CHARACTER_VOCABULARY_SIZE),
      outBias: zerosParam([CHARACTER_VOCABULARY_SIZE]),
    }),
  });
}
