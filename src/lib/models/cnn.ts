/**
 * The FedAvg paper's CNN for MNIST (McMahan et al. 2017, section 3): two 5x5 convolutions
 * (32 then 64 channels, ReLU, "same" padding), each followed by 2x2 max pooling, a dense
 * layer of 512 units with ReLU and a softmax layer of 10: 1,663,370 parameters.
 *
 * Its input is the flattened image [784], as for the dense models, so the same batches feed
 * every MNIST model; the logits reshape each batch to [B, 28, 28, 1] (NHWC).
 */
import { add, relu } from "../../front/elementwise.js";
import { conv2d, maxPool2d } from "../../front/nn.js";
import { matmul, reshape } from "../../front/tensor-ops.js";
import { f32 } from "../../front/specs.js";
import { convKernel, defineModel, denseKernel, zerosParam } from "./model.js";

/** 7 x 7 x 64, the pooled feature map flattened; written out because `7 * 7 * 64` types as number. */
const FEATURES = 3136;

const cnnSpecs = {
  conv1: f32([5, 5, 1, 32]),
  bias1: f32([32]),
  conv2: f32([5, 5, 32, 64]),
  bias2: f32([64]),
  dense: f32([FEATURES, 512]),
  denseBias: f32([512]),
  out: f32([512, 10]),
  outBias: f32([10]),
};
/**
 * cnn's parameter specs: its convolution kernels, dense kernels and biases.
 *
 * @example
 * const init: HostParams<CnnParams> = cnn.init(Rng.fromSeed(0));
 */
export type CnnParams = typeof cnnSpecs;

/**
 * McMahan et al. 2017's CNN for MNIST: two 5x5 convolutions (32 and 64 channels) each with 2x2 max
 * pooling, a 512-unit dense layer and 10 logits.
 *
 * @example
 * const round = fedAvgProgram(cnn);
 */
export const cnn = defineModel<CnnParams, [784], 10>({
  name: "cnn",
  params: cnnSpecs,
  inputShape: [784],
  classes: 10,
  logits: (p, x) => {
    const images = reshape(x, [-1, 28, 28, 1]);
    const h1 = maxPool2d(relu(add(conv2d(images, p.conv1), p.bias1)), 2);
    const h2 = maxPool2d(relu(add(conv2d(h1, p.conv2), p.bias2)), 2);
    const features = relu(add(matmul(reshape(h2, [-1, FEATURES]), p.dense), p.denseBias));
    return add(matmul(features, p.out), p.outBias);
  },
  init: (rng) => ({
    conv1: convKernel(rng.fork("conv1"), [5, 5, 1, 32]),
    bias1: zerosParam([32]),
    conv2: convKernel(rng.fork("conv2"), [5, 5, 32, 64]),
    bias2: zerosParam([64]),
    dense: denseKernel(rng.fork("dense"), FEATURES, 512),
    denseBias: zerosParam([512]),
    out: denseKernel(rng.fork("out"), 512, 10),
    outBias: zerosParam([10]),
  }),
});
