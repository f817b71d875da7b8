/**
 * Deliberate placement and shape mistakes, for the check demo:
 *
 *   npx fedtensor check -p examples/tsconfig.json
 *
 * Every mistake below fails `tsc` with one FT error, and nothing else: a failed operation
 * still has the type the user meant, so the lines that use its result stay quiet.
 * `fedtensor check` and the editor plugin explain each one and say how to fix it. (This file
 * is excluded from the build.)
 */
import {
  add,
  atClients,
  atServer,
  broadcast,
  einsum,
  f32,
  i32,
  jvp,
  map,
  matmul,
  mean,
  mul,
  program,
  reduceMean,
  reshape,
  softmaxCrossEntropy,
  sparseSoftmaxCrossEntropy,
  sub,
} from "fedtensor";

const inputs = {
  params: atServer({ w: f32([784, 10]), b: f32([10]) }),
  images: atClients(f32(["B", 784])),
  labels: atClients(i32(["B"])),
  deltas: atClients({ w: f32([784, 10]), b: f32([10]) }),
  temperature: f32([]),
};

export const mistakes = program(inputs, ({ params, images, labels, deltas, temperature }) => {
  // The model lives at the SERVER: map() needs it broadcast to the clients first (FT102).
  const logits = map((w, x) => add(matmul(x, w.w), w.b), params, images);

  // A server-side update cannot subtract a CLIENTS value (FT104): reduce it first.
  const stepped = sub(params.w, mul(images, 0.1));

  // Inner dims of a matmul must agree: [784,10] @ [B,784] (FT202); the operands are swapped.
  const scores = map((x, w) => matmul(w, x), images, broadcast(params.w));

  // The labels are int32 class ids; the loss wants one-hot f32 rows (FT205: use oneHot).
  const losses = map((x, y, w) => softmaxCrossEntropy(matmul(x, w), y), images, labels, broadcast(params.w));

  // einsum letters name the axes in the order they are stored: the weights are [784,10], so
  // "oi" reads 10 as i where the images have 784 (FT213).
  const projected = map((x, w) => einsum("bi,oi->bo", x, w), images, broadcast(params.w));

  // 784 pixels do not make a 28x29 image (FT203).
  const images2d = map((x) => reshape(x, ["B", 28, 29]), images);

  // Only CLIENTS values can be averaged over the clients (FT103).
  const meanModel = reduceMean(params.w);

  // broadcast() inside map()'s function, even of a captured SERVER value (FT105): broadcast
  // before map() and pass the result in.
  const hidden = map((x) => matmul(x, broadcast(params.w)), images);

  // A local constant has no per-client members to map over (FT102): use it inside the function.
  const tempered = map((l, t) => mul(l, t), logits, temperature);

  // Each tree leaf that mixes placements is named (FT104 at w, at b): reduce the deltas first.
  const updated = add(params, deltas);
  const bias = updated.b;

  // A tangent of another shape than its primal (FT206).
  const [, slope] = jvp((w) => mean(w), [params.b], [params.w]);

  return { logits, stepped, scores, projected, losses, images2d, meanModel, hidden, tempered, bias, slope };
});

// Labels of another batch size than the logits (FT201, in the shapes as written: i32[N]
// against f32[B,10], not those of the one-hot rows made inside).
export const batchLoss = program({ scores: f32(["B", 10]), classes: i32(["N"]) }, ({ scores, classes }) =>
  mean(sparseSoftmaxCrossEntropy(scores, classes)),
);
