/**
 * A trained model as a standard ONNX inference graph: features in, logits out, the weights of
 * a run's latest checkpoint stored in the graph as initializers. Any onnxruntime (Python, C++,
 * C#, Java, the web) runs it with no FedTensor installed.
 *
 * The graph comes from the same lowering as training's (src/lower/onnx): the model's logits
 * traced as a program, specialised to the batch size, and lowered with its parameter inputs
 * turned into constants. The lowering works on concrete shapes: the batch dim is left
 * symbolic only where the graph is the same for every batch size (inferenceModel).
 */
import { ftError } from "../../errors/error.js";
import { program } from "../../front/program.js";
import { f32, i32 } from "../../front/specs.js";
import { flattenAs, leafPaths } from "../../front/tree.js";
import type { ValueType } from "../../ir/types.js";
import { buildModel } from "../../lower/onnx/model.js";
import { batchProgram } from "../../transform/batch.js";
import { simplify } from "../../transform/simplify.js";
import { specialize } from "../../transform/specialize.js";
import type { Value } from "../algorithms/loose.js";
import type { AnyModel } from "../algorithms/types.js";
import { writeFileAtomic } from "./atomic-file.js";
import { loadLatestCheckpoint } from "./checkpoint.js";
import { isStoredTensor } from "./checkpoint-types.js";
import { validateRunConfig } from "./config.js";
import { modelFor } from "./setup.js";

/** The batch dim's name: the one the models' logits use in their reshapes. */
const BATCH = "B";

/** The logits program: (params, x [N, ...inputShape]) -> logits [N, classes], all local. */
export function logitsProgram(model: AnyModel) {
  const shape = [BATCH, ...model.inputShape] as const;
  return program(
    { params: model.params, x: model.inputDType === "int32" ? i32(shape) : f32(shape) } as never,
    ({ params, x }: Value) => ({ logits: model.logits(params, x) }),
    { name: `${model.name}_logits` },
  );
}

export interface InferenceModel {
  /** The ONNX model's bytes. */
  readonly bytes: Uint8Array;
  /** `x`: [N, ...model.inputShape], float32 (int32 token ids for the text model); N is "N" when any batch size runs. */
  readonly input: { readonly name: "x"; readonly dtype: string; readonly shape: readonly (number | "N")[] };
  /** `logits`: [N, classes], float32. */
  readonly output: { readonly name: "logits"; readonly shape: readonly (number | "N")[] };
}

/** The ONNX bytes of the logits program lowered for `batchSize`, with the parameters as constants. */
function lowerForBatch(model: AnyModel, params: unknown, batchSize: number, batchDim: string | undefined): Uint8Array {
  const { ir } = logitsProgram(model);
  const xShape = [batchSize, ...model.inputShape];
  // The program's inputs in its input tree's order; x stands in as an empty tensor of its shape.
  const leaves = flattenAs(ir.inputTree, { params, x: { shape: xShape, data: new Float32Array(0) } }, isStoredTensor, "model");
  const xIndex = (ir.inputTree as { readonly x: number }).x;
  const paths = leafPaths(ir.inputTree);
  const types: ValueType[] = ir.graph.inputs.map((id, i) => {
    const declared = ir.values[id]!;
    const shape = leaves[i]!.shape;
    if (i !== xIndex && shape.join(",") !== declared.shape.join(",")) {
      throw ftError("FT302", { what: `model ${paths[i]}`, why: `shape [${shape.join(",")}] where model ${model.name} has [${declared.shape.join(",")}]` });
    }
    return { ...declared, shape: [...shape] };
  });
  const concrete = simplify(specialize(ir, types, new Map([[BATCH, batchSize]])));
  const lowered = simplify(batchProgram(concrete, 1, { acceptBatchedMap: () => true }).ir);
  const constants = new Map(leaves.flatMap((leaf, i) => (i === xIndex ? [] : [[i, leaf.data] as const])));
  return buildModel(lowered, { constants, inputNames: ["x"], outputNames: ["logits"], ...(batchDim === undefined ? {} : { batchDim }) }).bytes;
}

const sameBytes = (a: Uint8Array, b: Uint8Array): boolean => Buffer.from(a.buffer, a.byteOffset, a.byteLength).equals(b);

/**
 * The inference graph of `model` with `params` (a tree of host tensors shaped as model.params)
 * baked in. With `batchSize`, x and logits have that batch dim. Without, the batch dim is
 * symbolic ("N") when the lowered graph does not depend on it (lowered for two batch sizes,
 * the graphs are the same byte for byte: the dense models); a model whose graph holds its
 * batch size (a reshape's target shape, in the CNN and the text model) is exported for batch 1.
 */
export function inferenceModel(model: AnyModel, params: unknown, batchSize?: number): InferenceModel {
  if (batchSize !== undefined && (!Number.isSafeInteger(batchSize) || batchSize < 1)) {
    throw ftError("FT305", { option: "--batch-size", why: `expected an integer >= 1, got ${batchSize}` });
  }
  const shapes = (n: number | "N") => ({
    input: { name: "x", dtype: model.inputDType ?? "float32", shape: [n, ...model.inputShape] },
    output: { name: "logits", shape: [n, model.classes] },
  }) as const;
  if (batchSize !== undefined) return { bytes: lowerForBatch(model, params, batchSize, undefined), ...shapes(batchSize) };
  const two = lowerForBatch(model, params, 2, "N");
  if (sameBytes(two, lowerForBatch(model, params, 3, "N"))) return { bytes: two, ...shapes("N") };
  return { bytes: lowerForBatch(model, params, 1, undefined), ...shapes(1) };
}

export interface ExportedRun extends InferenceModel {
  readonly round: number;
  readonly checkpoint: string;
  readonly modelName: string;
}

/** Writes the inference graph of the model in `runDir`'s latest checkpoint to `onnxPath`. */
export async function exportRunToOnnx(runDir: string, onnxPath: string, batchSize?: number): Promise<ExportedRun> {
  const loaded = await loadLatestCheckpoint(runDir);
  if (loaded === undefined) throw ftError("FT304", { path: runDir, why: "no checkpoint there to export (is it a run folder of `fedtensor run`?)" });
  const { checkpoint, path } = loaded;
  const config = validateRunConfig(checkpoint.config as Record<string, unknown>, path);
  const model = modelFor(config);
  const params = (checkpoint.serverState as { params?: unknown }).params;
  if (params === undefined) throw ftError("FT304", { path, why: "the checkpoint holds no model parameters" });
  const exported = inferenceModel(model, params, batchSize);
  try {
    await writeFileAtomic(onnxPath, exported.bytes);
  } catch (error) {
    throw ftError("FT304", { path: onnxPath, why: `cannot write the ONNX model (${(error as Error).message})` });
  }
  return { ...exported, round: checkpoint.round, checkpoint: path, modelName: model.name };
}
