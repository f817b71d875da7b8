/**
 * A small next-character model for the State of the Union set (src/lib/data/sotu.ts): each
 * example is a window of character ids. The ids are embedded (oneHot times an embedding
 * matrix, which is a lookup that grad differentiates as a matmul), the window's embeddings
 * are flattened and go through one dense ReLU layer, and a softmax layer scores the
 * vocabulary. Small on purpose: a few federated rounds train in seconds on a CPU.
 */
import { add, relu } from "../../front/elementwise.js";
import { matmul, oneHot, reshape } from "../../front/tensor-ops.js";
import { f32 } from "../../front/specs.js";
import type { Place, Tensor, ValueOf } from "../../../types/tensor.js";
import { CHARACTER_VOCABULARY_SIZE } from "../data/sotu.js";
import { defineModel, denseKernel, zerosParam, type Model } from "./model.js";

type Vocabulary = typeof CHARACTER_VOCABULARY_SIZE;

/**
 * characterModel's options: the window length (it must match the data's), the embedding width and
 * the hidden width.
 *
 * @example
 * const model = characterModel({ sequenceLength: 80, embedding: 8, hidden: 256 } satisfies CharacterModelOptions<80>);
 */
export interface CharacterModelOptions<L extends number> {
  /** Characters per window; must match the data's (default 80, loadSotuCharacters's default). */
  readonly sequenceLength?: L;
  /** Width of a character's embedding (default 8). */
  readonly embedding?: number;
  /** Units of the hidden layer (default 64). */
  readonly hidden?: number;
}

function characterSpecs(sequenceLength: number, embedding: number, hidden: number) {
  return {
    embedding: f32([CHARACTER_VOCABULARY_SIZE, embedding]),
    hidden: f32([sequenceLength * embedding, hidden]),
    hiddenBias: f32([hidden]),
    out: f32([hidden, CHARACTER_VOCABULARY_SIZE]),
    outBias: f32([CHARACTER_VOCABULARY_SIZE]),
  };
}
/**
 * characterModel's parameter specs.
 *
 * @example
 * const init: HostParams<CharacterParams> = characterModel().init(Rng.fromSeed(0));
 */
export type CharacterParams = ReturnType<typeof characterSpecs>;

function characterLogits(
  p: Place<ValueOf<CharacterParams>, "member">,
  ids: Tensor<["B", number], "int32", "member">,
): Tensor<["B", Vocabulary], "float32", "member"> {
  const embedded = matmul(oneHot(ids, CHARACTER_VOCABULARY_SIZE), p.embedding);
  const window = reshape(embedded, ["B", -1]);
  return add(matmul(relu(add(matmul(window, p.hidden), p.hiddenBias)), p.out), p.outBias);
}

/**
 * The model for windows of `sequenceLength` character ids (int32 features).
 *
 * @example
 * import { characterModel, fedAvgProgram } from "fedtensor/lib";
 * const model = characterModel({ sequenceLength: 80, embedding: 8, hidden: 64 });
 * const round = fedAvgProgram(model); // x is i32[S, B, 80] at the CLIENTS
 */
export function characterModel<const L extends number = 80>(
  options: CharacterModelOptions<L> = {},
): Model<CharacterParams, [L], Vocabulary, "int32"> {
  const { sequenceLength = 80 as L, embedding = 8, hidden = 64 } = options;
  return defineModel<CharacterParams, [L], Vocabulary, "int32">({
    name: `char${sequenceLength}`,
    params: characterSpecs(sequenceLength, embedding, hidden),
    inputShape: [sequenceLength],
    classes: CHARACTER_VOCABULARY_SIZE,
    inputDType: "int32",
    logits: characterLogits,
    init: (rng) => ({
      embedding: denseKernel(rng.fork("embedding"), CHARACTER_VOCABULARY_SIZE, embedding),
      hidden: denseKernel(rng.fork("hidden"), sequenceLength * embedding, hidden),
      hiddenBias: zerosParam([hidden]),
      out: denseKernel(rng.fork("out"), hidden, CHARACTER_VOCABULARY_SIZE),
      outBias: zerosParam([CHARACTER_VOCABULARY_SIZE]),
    }),
  });
}
