/**
 * Which two accumulator entries give a client its own training loss. A round that reports the
 * cohort's loss as reduceWeightedMean(losses, counts) accumulates sum(loss * count) and
 * sum(count), and its update part divides the one by the other. The same division over one
 * client's own accumulator, before it is masked or noised, is that client's mean training loss:
 * the part message names the two entries so that a client can show it (the browser page's loss
 * chart). The client computes it from its own outputs and never sends it.
 */
import type { MapReduceForm, Part } from "../../transform/mapreduce.js";

export interface LocalLossEntries {
  /** The accumulator entry holding the sum of the client's example-weighted losses. */
  readonly sum: string;
  /** The one holding the sum of its weights (its examples). */
  readonly weight: string;
}

/** The graph input of `part` that value `value` is, by name, or undefined when it is computed. */
const inputName = (part: Part, value: number): string | undefined => {
  const index = part.ir.graph.inputs.indexOf(value);
  return index < 0 ? undefined : part.inputs[index];
};

/**
 * The entries when the form's reported `loss` is one division of two reported accumulator
 * entries that the report part passes through unchanged; undefined for any other form (no loss
 * reported, or one computed otherwise), whose clients then show only the round's loss.
 */
export function localLossEntries(form: MapReduceForm): LocalLossEntries | undefined {
  const { update, report } = form.parts;
  const lossAt = update.outputs.indexOf("loss");
  if (lossAt < 0) return undefined;
  const loss = update.ir.graph.outputs[lossAt]!;
  const division = update.ir.graph.nodes.find((node) => node.outputs.includes(loss));
  if (division?.op !== "div" || division.inputs.length !== 2) return undefined;
  // Each operand: an input of update that is an output of report, which is an accumulator entry (report's input) as it is.
  const entry = (operand: number): string | undefined => {
    const reported = inputName(update, operand);
    const at = reported === undefined ? -1 : report.outputs.indexOf(reported);
    return at < 0 ? undefined : inputName(report, report.ir.graph.outputs[at]!);
  };
  const sum = entry(division.inputs[0]!);
  const weight = entry(division.inputs[1]!);
  if (sum === undefined || weight === undefined || !form.workAndAccumulate.outputs.includes(sum) || !form.workAndAccumulate.outputs.includes(weight)) return undefined;
  return { sum, weight };
}
