/**
 * Dense models on flattened images: multinomial logistic regression (784-10) and the FedAvg
 * paper's "2NN" (784-200-200-10 with ReLU), McMahan et al. 2017.
 */
import { add, relu } from "../../front/elementwise.js";
import { matmul } from "../../front/tensor-ops.js";
import { f32 } from "../../front/specs.js";
import { defineModel, denseKernel, zerosParam } from "./model.js";

const logisticSpecs = { w: f32([784, 10]), b: f32([10]) };
/**
 * logistic's parameter specs: w [784, 10] and b [10].
 *
 * @example
 * type W = LogisticParams["w"]; // TensorSpec<[784, 10], "float32", "local">
 */
export type LogisticParams = typeof logisticSpecs;

/**
 * Multinomial logistic regression on MNIST: 784 features to 10 logits, x w + b (the convex model
 * of McMahan et al. 2017's experiments).
 */
export const logistic = defineModel<LogisticParams, [784], 10>({
  name: "logistic",
  params: logisticSpecs,
  inputShape: [784],
  classes: 10,
  logits: (p, x) => add(matmul(x, p.w), p.b),
  init: (rng) => ({ w: denseKernel(rng.fork("w"), 784, 10), b: zerosParam([10]) }),
});

const mlpSpecs = {
  w1: f32([784, 200]),
  b1: f32([200]),
  w2: f32([200, 200]),
  b2: f32([200]),
  w3: f32([200, 10]),
  b3: f32([10]),
};
/**
 * mlp2nn's parameter specs: three dense layers' kernels and biases.
 *
 * @example
 * const init: HostParams<MlpParams> = mlp2nn.init(Rng.fromSeed(0));
 */
export type MlpParams = typeof mlpSpecs;

/**
 * McMahan et al. 2017's 2NN for MNIST: 784-200-200-10 with ReLU, 199,210 parameters.
 *
 * @example
 * const round = fedAvgProgram(mlp2nn);
 */
export const mlp2nn = defineModel<MlpParams, [784], 10>({
  name: "2nn",
  params: mlpSpecs,
  inputShape: [784],
  classes: 10,
  logits: (p, x) => {
    const h1 = relu(add(matmul(x, p.w1), p.b1));
    const h2 = relu(add(matmul(h1, p.w2), p.b2));
    return add(matmul(h2, p.w3), p.b3);
  },
  init: (rng) => ({
    w1: denseKernel(rng.fork("w1"), 784, 200),
    b1: zerosParam([200]),
    w2: denseKernel(rng.fork("w2"), 200, 200),
    b2: zerosParam([200]),
    w3: denseKernel(rng.fork("w3"), 200, 10),
    b3: zerosParam([10]),
  }),
});
