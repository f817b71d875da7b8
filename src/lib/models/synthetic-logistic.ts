/**
 * Multinomial logistic regression on FedProx's Synthetic data (60 features, 10 classes): the
 * model the paper trains on it (Li et al. 2020, section 5.1), what `fedtensor run --dataset
 * synthetic --model logistic` trains (the image sets' logistic takes 784 features).
 */
import { add } from "../../front/elementwise.js";
import { f32 } from "../../front/specs.js";
import { matmul } from "../../front/tensor-ops.js";
import { defineModel, denseKernel, zerosParam } from "./model.js";

const specs = { w: f32([60, 10]), b: f32([10]) };

export const syntheticLogistic = defineModel<typeof specs, [60], 10>({
  name: "logistic",
  params: specs,
  inputShape: [60],
  classes: 10,
  logits: (p, x) => add(matmul(x, p.w), p.b),
  init: (rng) => ({ w: denseKernel(rng.fork("w"), 60, 10), b: zerosParam([10]) }),
});
