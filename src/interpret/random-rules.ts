/**
 * Evaluation rules of the random-number primitives: the generator's own definition
 * (src/ir/threefry.ts) on the interpreter's tensors, whose int32 words are carried as float64.
 */
import * as shapes from "../ir/shapes.js";
import { printType } from "../ir/print.js";
import { normalsFromWords } from "../ir/normal.js";
import { randomBits, threefryPairs, uniformFromWord } from "../ir/threefry.js";
import type { ControlRule, TensorRule } from "./rule.js";
import { scalar, sizeOf, tensor, type Tensor } from "./tensor.js";
import { AtClients } from "./values.js";

const words = (x: Tensor) => ({ shape: x.shape, data: Int32Array.from(x.data) });

export const randomRules: Record<string, TensorRule> = {
  threefry2x32: ([key, counter], cx) => {
    const ctx = { op: cx.op, a: printType(cx.inputTypes[0]!), b: printType(cx.inputTypes[1]!) };
    const lead = shapes.broadcastShapes(key!.shape.slice(0, -1), counter!.shape.slice(0, -1), ctx) as number[];
    const out = threefryPairs(words(key!), words(counter!), lead);
    return tensor(out.shape, "int32", Float64Array.from(out.data));
  },
  random_bits: ([key], cx) => {
    const drawn = (cx.attrs.shape as (string | number | null)[]).map((d) => cx.dims.resolve(d, `${cx.op}() shape`));
    const out = randomBits(Int32Array.from(key!.data), sizeOf(drawn));
    return tensor([...key!.shape.slice(0, -1), ...drawn], "int32", Float64Array.from(out));
  },
  normal_from_bits: ([x]) => tensor(x!.shape.slice(0, -1), "float32", Float64Array.from(normalsFromWords(x!.data))),
  uniform_from_bits: ([x], cx) => {
    const [min, max] = [cx.attrs.min as number, cx.attrs.max as number];
    return tensor(x!.shape, "float32", x!.data.map((w) => uniformFromWord(w, min, max)));
  },
};

export const randomControlRules: Record<string, ControlRule> = {
  client_iota: (_inputs, _node, run) => [new AtClients(Array.from({ length: run.clients() }, (_, i) => scalar(i, "int32")))],
};
