/**
 * The client part a server ships: the round's fused work+accumulate part (the MapReduce form's
 * per-client computation, local training and its gradients included) specialised to one
 * client's batches (its number of steps), batched for a cohort of one and lowered to one ONNX
 * model, with the empty accumulator it starts from folded in as constants. Named by the SHA-256
 * of its bytes; compiled once per form and number of steps.
 */
import { createHash } from "node:crypto";
import type * as tf from "@tensorflow/tfjs";
import { leafPaths } from "../../ir/tree-paths.js";
import type { DType } from "../../ir/types.js";
import { buildModel } from "../../lower/onnx/model.js";
import { bindInputs } from "../../runtime/inputs.js";
import { onnxLowering } from "../../runtime/lowering.js";
import { runProgram } from "../../runtime/run.js";
import { batchProgram } from "../../transform/batch.js";
import type { MapReduceForm } from "../../transform/mapreduce.js";
import { simplify } from "../../transform/simplify.js";
import { specialize } from "../../transform/specialize.js";
import { localLossEntries, type LocalLossEntries } from "./local-loss.js";

export interface CompiledPart {
  readonly hash: string;
  readonly bytes: Uint8Array;
  /** The model's inputs: shared inputs' names, then the client's (x, y, mask, count). */
  readonly inputs: readonly string[];
  readonly outputs: readonly string[];
  readonly checks: readonly { readonly output: string; readonly what: string }[];
  /** The shared inputs the task carries: the part's inputs that are neither the client's data nor the accumulator. */
  readonly shared: readonly string[];
  /** The accumulator entries whose ratio is the client's own training loss (local-loss.ts), if the form has them. */
  readonly loss: LocalLossEntries | undefined;
  /** The client's state: inputs it reads from its own store and outputs it writes back there, never sent (the form's keptState). */
  readonly state: MapReduceForm["keptState"];
}

/** The shape of one client's batches of `steps` steps, as a cohort of one. */
export interface ClientShape {
  readonly steps: number;
  readonly batchSize: number;
  readonly featureShape: readonly number[];
}

const zeros = (dtype: DType, shape: readonly number[]) => {
  const size = shape.reduce((a, b) => a * b, 1);
  const data = dtype === "int32" ? new Int32Array(size) : dtype === "bool" ? new Uint8Array(size) : new Float32Array(size);
  return { shape, data };
};

export class PartCompiler {
  private readonly compiled = new Map<string, CompiledPart>();
  private readonly zero: Promise<Map<string, Float32Array | Int32Array | Uint8Array>>;
  /** The accumulator's entries as an update must carry them: name, dtype and shape (the zero part's outputs). */
  readonly accumulator: Promise<Map<string, { readonly dtype: string; readonly shape: readonly number[] }>>;
  /** The same for every part of the form: found once here. */
  private readonly loss: LocalLossEntries | undefined;

  constructor(private readonly form: MapReduceForm) {
    this.loss = localLossEntries(form);
    // The empty accumulator: the same for every client and round, computed once here.
    const computed = (async () => {
      const out = (await runProgram(form.parts.zero.ir, {}, { clients: 1, workers: 0 })) as Record<string, tf.Tensor>;
      const values = new Map<string, Float32Array | Int32Array | Uint8Array>();
      const types = new Map<string, { dtype: string; shape: readonly number[] }>();
      for (const [name, t] of Object.entries(out)) {
        values.set(name, (await t.data()) as Float32Array | Int32Array | Uint8Array);
        types.set(name, { dtype: t.dtype, shape: t.shape });
        t.dispose();
      }
      return { values, types };
    })();
    this.zero = computed.then((z) => z.values);
    this.accumulator = computed.then((z) => z.types);
  }

  /** The part for clients of `shape`, given the round's shared inputs (their shapes fix the model's). */
  async part(shape: ClientShape, shared: ReadonlyMap<string, unknown>): Promise<CompiledPart> {
    const key = `${shape.steps}x${shape.batchSize}`;
    let part = this.compiled.get(key);
    if (part === undefined) {
      part = await this.compile(shape, shared);
      this.compiled.set(key, part);
    }
    return part;
  }

  private async compile(shape: ClientShape, shared: ReadonlyMap<string, unknown>): Promise<CompiledPart> {
    const part = this.form.workAndAccumulate;
    const zero = await this.zero;
    const { ir } = part;
    const names = leafPaths(ir.inputTree);
    const lead = [1, shape.steps, shape.batchSize];
    const clientShapes: Record<string, readonly number[]> = { x: [...lead, ...shape.featureShape], y: lead, mask: lead, count: [1] };
    // The client's state inputs: one client's value, from its own store.
    for (const { input } of this.form.keptState) clientShapes[input] = [1, ...(ir.values[ir.graph.inputs[names.indexOf(input)]!]!.shape as readonly number[])];
    // Placeholders of the right shape for the client's inputs and the accumulator; the round's values for the rest.
    const inputs = Object.fromEntries(
      names.map((name, i) => {
        const declared = ir.values[ir.graph.inputs[i]!]!;
        const acc = zero.get(name);
        if (acc !== undefined) return [name, { shape: declared.shape, data: acc }];
        const client = clientShapes[name];
        return [name, client === undefined ? shared.get(name) : zeros(declared.dtype, client)];
      }),
    );
    const bound = bindInputs(ir, inputs, undefined);
    try {
      const lowering = onnxLowering({ executionProvider: "cpu" });
      const concrete = simplify(specialize(ir, bound.types, bound.bindings));
      const batched = simplify(batchProgram(concrete, bound.clients, lowering.policy).ir);
      const constants = new Map<number, ArrayLike<number>>();
      names.forEach((name, i) => {
        const acc = zero.get(name);
        if (acc !== undefined) constants.set(i, acc);
      });
      const free = names.filter((name) => !zero.has(name));
      const model = buildModel(batched, { constants, inputNames: free, outputNames: leafPaths(ir.outputTree) });
      const hash = createHash("sha256").update(model.bytes).digest("hex");
      return {
        hash,
        bytes: model.bytes,
        inputs: model.inputs,
        outputs: model.outputs,
        // The check's own error for one violation says what it checks.
        checks: model.checks.map((c) => ({ output: c.output, what: c.fail(1).message })),
        shared: free.filter((name) => clientShapes[name] === undefined),
        loss: this.loss,
        state: this.form.keptState,
      };
    } finally {
      bound.created.forEach((t) => t.dispose());
    }
  }
}
