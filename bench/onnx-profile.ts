/**
 * bench/onnx-profile: where an onnx program's time goes, from onnxruntime's profile. Run the
 * program with FEDTENSOR_ONNX_PROFILE=<prefix> (every session then writes
 * <prefix>_<date>.json when it is released), then sum that file's kernel times by operator
 * and by node. Loop and If nodes are listed apart: their time includes their bodies' nodes,
 * which are listed themselves. Shares are of the time in the other nodes.
 *
 * usage: node dist/bench/onnx-profile.js PROFILE.json [--top 20]
 */
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";

interface TraceEvent {
  readonly cat?: string;
  readonly name: string;
  /** Microseconds. */
  readonly dur: number;
  readonly args?: { readonly op_name?: string; readonly output_type_shape?: readonly Record<string, number[]>[] };
}

const { values, positionals } = parseArgs({ allowPositionals: true, options: { top: { type: "string", default: "20" } } });
if (positionals.length !== 1) throw new Error("usage: node dist/bench/onnx-profile.js PROFILE.json [--top 20]");
const events = JSON.parse(readFileSync(positionals[0]!, "utf8")) as TraceEvent[];
const containers = new Set(["Loop", "If", "Scan"]);

const byOp = new Map<string, { us: number; calls: number }>();
const byNode = new Map<string, number>();
const runs: number[] = [];
for (const e of events) {
  if (e.cat === "Session" && e.name === "model_run") runs.push(e.dur);
  if (e.cat !== "Node" || !e.name.endsWith("_kernel_time")) continue;
  const op = e.args?.op_name ?? "?";
  const entry = byOp.get(op) ?? { us: 0, calls: 0 };
  byOp.set(op, { us: entry.us + e.dur, calls: entry.calls + 1 });
  const shape = (e.args?.output_type_shape ?? []).map((o) => Object.entries(o).map(([t, s]) => `${t}[${s.join(",")}]`)).join(" ");
  const key = `${op.padEnd(16)} ${e.name.replace(/_kernel_time$/, "").slice(0, 40).padEnd(40)} -> ${shape}`;
  byNode.set(key, (byNode.get(key) ?? 0) + e.dur);
}
const total = [...byOp].filter(([op]) => !containers.has(op)).reduce((s, [, v]) => s + v.us, 0);
const seconds = (us: number) => (us / 1e6).toFixed(3).padStart(8);
const share = (us: number) => `${((100 * us) / total).toFixed(1).padStart(5)}%`;

console.log(`${positionals[0]}: ${runs.length} session runs, ${seconds(runs.reduce((a, b) => a + b, 0))} s in them; ${seconds(total)} s in kernels outside Loop/If`);
console.log("by operator:");
for (const [op, { us, calls }] of [...byOp].sort((a, b) => b[1].us - a[1].us)) {
  console.log(`  ${op.padEnd(24)} ${seconds(us)} s ${containers.has(op) ? "   (body)" : share(us)}  ${calls} calls`);
}
console.log(`top ${values.top} nodes:`);
for (const [key, us] of [...byNode].filter(([k]) => !containers.has(k.split(" ")[0]!)).sort((a, b) => b[1] - a[1]).slice(0, Number(values.top))) {
  console.log(`  ${seconds(us)} s ${share(us)}  ${key}`);
}
