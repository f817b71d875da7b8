/**
 * `fedtensor export <run folder> --onnx model.onnx [--batch-size N]`: the trained model of a
 * run's latest checkpoint as a standard ONNX inference graph (features in, logits out).
 */
import { parseArgs } from "node:util";
import { UsageError, type Command } from "./command.js";

export const exportCommand: Command = {
  name: "export",
  summary: "write a run's trained model as an ONNX inference graph",
  usage: [
    "usage: fedtensor export <run folder> --onnx model.onnx [--batch-size N]",
    "",
    "  run folder     the --out folder of `fedtensor run`; its latest valid checkpoint is exported",
    "  --onnx FILE    where to write the ONNX model: input x [N, ...features], output logits [N, classes]",
    "  --batch-size N fix the batch dim N of x and logits; by default it is symbolic (any N) where",
    "                 the model's graph allows (the dense models), else 1 (the CNN and the text model)",
  ].join("\n"),
  async run(args) {
    let parsed;
    try {
      parsed = parseArgs({ args: [...args], options: { onnx: { type: "string" }, "batch-size": { type: "string" } }, allowPositionals: true, strict: true });
    } catch (error) {
      throw new UsageError((error as Error).message);
    }
    const { values, positionals } = parsed;
    if (positionals.length !== 1) throw new UsageError("expected one run folder");
    if (values.onnx === undefined) throw new UsageError("--onnx FILE is required (the only export format)");
    const batchText = values["batch-size"];
    if (batchText !== undefined && !(/^\d+$/.test(batchText) && Number(batchText) >= 1)) {
      throw new UsageError(`--batch-size takes an integer >= 1, got ${batchText}`);
    }
    // Loaded here so that other commands start without TensorFlow.js.
    const { exportRunToOnnx } = await import("../lib/run/export.js");
    const exported = await exportRunToOnnx(positionals[0]!, values.onnx, batchText === undefined ? undefined : Number(batchText));
    console.log(
      `wrote ${values.onnx}: model ${exported.modelName} of round ${exported.round} (${exported.checkpoint}); ` +
        `input x ${exported.input.dtype}[${exported.input.shape.join(",")}], output logits float32[${exported.output.shape.join(",")}]`,
    );
    return 0;
  },
};
