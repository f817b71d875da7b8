/**
 * Deliberate placement and shape mistakes, for the check demo:
 *
 *   npx fedtensor check -p examples/tsconfig.json
 *
 * Every mistake below fails `tsc` with an FT error; `fedtensor check` and the editor plugin
 * explain each one and say how to fix it. (This file is excluded from the build.)
 */
import {
  add,
  atClients,
  atServer,
  broadcast,
  f32,
  i32,
  map,
  matmul,
  mul,
  program,
  reduceMean,
  reshape,
  softmaxCrossEntropy,
  sub,
} from "../src/index.js";

const inputs = {
  params: atServer({ w: f32([784, 10]), b: f32([10]) }),
  images: atClients(f32(["B", 784])),
  labels: atClients(i32(["B"])),
};

export const mistakes = program(inputs, ({ params, images, labels }) => {
  // The model lives at the SERVER: map() needs it broadcast to the clients first (FT102).
  const logits = map((w, x) => add(matmul(x, w.w), w.b), params, images);

  // A server-side update cannot subtract a CLIENTS value (FT104): reduce it first.
  const stepped = sub(params.w, mul(images, 0.1));

  // Inner dims of a matmul must agree: [784,10] @ [B,784] (FT202); the operands are swapped.
  const scores = map((x, w) => matmul(w, x), images, broadcast(params.w));

  // The labels are int32 class ids; the loss wants one-hot f32 rows (FT205: use oneHot).
  const losses = map((x, y, w) => softmaxCrossEntropy(matmul(x, w), y), images, labels, broadcast(params.w));

  // 784 pixels do not make a 28x29 image (FT203).
  const images2d = map((x) => reshape(x, ["B", 28, 29]), images);

  // Only CLIENTS values can be averaged over the clients (FT103).
  const meanModel = reduceMean(params.w);

  return { logits, stepped, scores, losses, images2d, meanModel };
});
