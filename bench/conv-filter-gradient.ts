/**
 * bench/conv-filter-gradient: conv2d's filter gradient on a tfjs backend (webgpu by default),
 * the backend's own Conv2DBackpropFilter kernel against the form the lowering uses there
 * (src/lower/tfjs-windows.ts conv2dFilterGradient: a convolution of the input with the output
 * cotangent, on the backend's Conv2D shaders), on the CNN's second convolution (a batch of 20,
 * 14x14x32 in, 5x5 filters to 64 channels, same padding). Alternating, after a warm-up; prints
 * ms per call of each, their ratio, and how far the two results are apart.
 *
 * usage: node dist/bench/conv-filter-gradient.js [--backend webgpu] [--calls 10] [--repeats 3]
 *   (on Mesa's llvmpipe: FEDTENSOR_WEBGPU_DAWN=backend=opengl EGL_PLATFORM=surfaceless)
 */
import { parseArgs } from "node:util";
import * as tf from "@tensorflow/tfjs";
import { conv2dFilterGradient } from "../src/lower/tfjs-windows.js";
import { useBackend, type BackendName } from "../src/runtime/backend.js";
import { median } from "./stats.js";

const { values } = parseArgs({ options: { backend: { type: "string", default: "webgpu" }, calls: { type: "string", default: "10" }, repeats: { type: "string", default: "3" } } });
const backend = values.backend as BackendName;
await useBackend(backend);
const [batch, size, inChannels, outChannels, window] = [20, 14, 32, 64, 5];
const filterShape = [window, window, inChannels, outChannels] as const;
const x = tf.randomNormal([batch, size, size, inChannels]);
const dy = tf.randomNormal([batch, size, size, outChannels]);
const attrs = { strides: [1, 1], padding: "same" };
const kernel = (inputs: tf.Tensor[]) => [tf.engine().runKernel("Conv2DBackpropFilter", { x: inputs[0]!, dy: inputs[1]! }, { strides: [1, 1], pad: "same", dataFormat: "NHWC", filterShape: [...filterShape] }) as tf.Tensor];
// Any backend name without the kernel gives the convolution form.
const convolution = conv2dFilterGradient(attrs, x.shape, filterShape, "convolution-form");
const forms = { "Conv2DBackpropFilter kernel": kernel, "convolution form": convolution };

const [fromKernel, fromConvolution] = await Promise.all(Object.values(forms).map(async (form) => {
  const [out] = form([x, dy]);
  const data = await out!.data();
  out!.dispose();
  return data;
}));
const apart = Math.max(...Array.from(fromKernel!, (v, i) => Math.abs(v - fromConvolution![i]!) / (1 + Math.abs(v))));

const times: Record<string, number[]> = Object.fromEntries(Object.keys(forms).map((name) => [name, []]));
for (let repeat = 0; repeat < Number(values.repeats); repeat++) {
  for (const [name, form] of Object.entries(forms)) {
    const start = performance.now();
    for (let call = 0; call < Number(values.calls); call++) {
      const [out] = form([x, dy]);
      await out!.data();
      out!.dispose();
    }
    times[name]!.push((performance.now() - start) / Number(values.calls));
  }
}
const [kernelMs, convolutionMs] = Object.values(times).map(median);
console.log(`conv-filter-gradient on ${backend}: x [${x.shape}], dy [${dy.shape}], filter [${filterShape}], median of ${values.repeats} x ${values.calls} calls`);
for (const [name, ms] of Object.entries(times)) console.log(`  ${name.padEnd(28)} ${median(ms).toFixed(2)} ms a call`);
console.log(`  convolution form / kernel: ${(convolutionMs! / kernelMs!).toFixed(3)}; largest relative difference ${apart.toExponential(2)}`);
