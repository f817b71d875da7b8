/** Running a program on every backend and the reference interpreter, outputs as plain arrays. */
import * as tf from "@tensorflow/tfjs";
import { interpret, type Program } from "../../src/index.js";
import type { InputTree, OutputLeaf } from "../../src/interpret/reference.js";

export const BACKENDS = ["onnx", "wasm", "cpu"] as const;
export type Where = (typeof BACKENDS)[number] | "reference";

type Outputs = Record<string, number[]>;

async function leaves(out: unknown): Promise<Outputs> {
  const result: Outputs = {};
  for (const [name, t] of Object.entries(out as Record<string, tf.Tensor>)) {
    result[name] = Array.from(await t.data());
    t.dispose();
  }
  return result;
}

/** A program returning a record of tensors, run on one backend (or the interpreter). */
export async function runOn(where: Where, p: Program<unknown, unknown>, inputs: InputTree, clients?: number): Promise<Outputs> {
  if (where === "reference") {
    const out = interpret(p.ir, inputs, clients === undefined ? {} : { clients }) as Record<string, OutputLeaf>;
    return Object.fromEntries(Object.entries(out).map(([k, v]) => [k, Array.from(v.data)]));
  }
  return leaves(await p.run(inputs as never, { backend: where, workers: 0, ...(clients === undefined ? {} : { clients }) }));
}
