/**
 * Running a program's client loops across threads. onnxruntime's and tfjs wasm's kernels for
 * the small products of local training do not spread over cores (onnxruntime's threads cost
 * more than they save there, tfjs wasm has one) and block the event loop; clients are
 * independent, so the main thread and each worker thread take a contiguous slice of the cohort.
 *
 * The batched program's top-level graph is cut into parts: each top-level client_loop, and
 * the runs of other nodes between them. The other parts compile with the backend's lowering
 * on this thread; a client_loop part runs as one smaller client_loop per thread (the same
 * body over its slice of the clients), compiled by each worker on first use, and the slices'
 * outputs are joined along the client axis.
 */
import * as tf from "@tensorflow/tfjs";
import type { Node, ProgramIR, ValueType } from "../ir/types.js";
import type { Executable, Lowering } from "./executable.js";
import { releaseOnWorkers, shardWorker, type HostData, type ShardResult } from "./worker-pool.js";

export interface ShardSettings {
  readonly backend: string;
  readonly executionProvider?: string;
  /** Worker threads besides this one. */
  readonly workers: number;
}

interface Part {
  readonly inputs: readonly number[];
  readonly outputs: readonly number[];
  run(inputs: readonly tf.Tensor[]): Promise<tf.Tensor[]>;
  dispose(): void;
}

let shardPrograms = 0;

const rowsOf = (clients: number, shards: number): number[] =>
  Array.from({ length: shards }, (_, s) => Math.floor(clients / shards) + (s < clients % shards ? 1 : 0));

/** One top-level client_loop, run as a slice of its clients on this thread and one on each worker. */
class ShardedLoop implements Part {
  readonly inputs: readonly number[];
  readonly outputs: readonly number[];
  /** Workers' programs, by slice size. */
  private readonly keys = new Map<number, string>();
  /** This thread's programs, by slice size. */
  private readonly local = new Map<number, Executable>();
  /** Input buffers the workers handed back, by size in bytes. */
  private readonly spare = new Map<number, ArrayBuffer[]>();
  /** Operands with the client axis. */
  private readonly batched: ReadonlySet<number>;

  constructor(
    private readonly node: Node,
    private readonly types: readonly ValueType[],
    private readonly lowering: Lowering,
    private readonly settings: ShardSettings,
  ) {
    this.inputs = node.inputs;
    this.outputs = node.outputs;
    this.batched = new Set(node.inputs.filter((_, i) => (node.attrs.batched as boolean[])[i]));
  }

  /** The client_loop over `rows` clients, as a program of its own. */
  private shardProgram(rows: number): ProgramIR {
    const batched = this.node.attrs.batched as boolean[];
    const values = [...this.types];
    const resize = (id: number) => (values[id] = { ...values[id]!, shape: [rows, ...values[id]!.shape.slice(1)] });
    this.node.inputs.forEach((id, i) => batched[i] && resize(id));
    this.node.outputs.forEach(resize);
    const node = { ...this.node, attrs: { ...this.node.attrs, clients: rows } };
    const inputs = [...new Set(this.node.inputs)];
    return { format: "fedtensor-ir", version: 1, name: `client slice of ${rows}`, values, graph: { inputs, nodes: [node], outputs: this.node.outputs }, inputTree: inputs.map((_, i) => i), outputTree: this.node.outputs.map((_, i) => i) };
  }

  /** A typed array of `length` elements for a worker's input: one the workers handed back, or new. */
  private staging(like: HostData["data"], length: number): HostData["data"] {
    const Typed = like.constructor as new (buffer: ArrayBuffer) => HostData["data"];
    const spare = this.spare.get(length * like.BYTES_PER_ELEMENT)?.pop();
    return spare !== undefined ? new Typed(spare) : new (like.constructor as new (n: number) => HostData["data"])(length);
  }

  /** The executable of this thread's slice of `rows` clients. */
  private localSlice(rows: number): Executable {
    let executable = this.local.get(rows);
    if (executable === undefined) this.local.set(rows, (executable = this.lowering.compile(this.shardProgram(rows))));
    return executable;
  }

  /** Runs the clients [begin, begin + count) on worker `w`, with copies of their inputs. */
  private onWorker(w: number, begin: number, count: number, host: ReadonlyMap<number, HostData>): Promise<ShardResult> {
    let key = this.keys.get(count);
    if (key === undefined) this.keys.set(count, (key = `shard${shardPrograms++}`));
    const worker = shardWorker(w);
    // The inputs go into arrays the worker hands back after the run: fresh memory costs a page
    // fault per 4 KiB on first touch, which for a cohort's data is as much as copying it.
    const inputs = [...host].map(([id, h]) => {
      const row = this.batched.has(id) ? h.data.length / h.shape[0]! : 0;
      const part = this.batched.has(id) ? h.data.subarray(begin * row, (begin + count) * row) : h.data;
      const data = this.staging(h.data, part.length);
      data.set(part);
      return { data, shape: this.batched.has(id) ? [count, ...h.shape.slice(1)] : h.shape, dtype: h.dtype };
    });
    const program = worker.knows.has(key) ? undefined : this.shardProgram(count);
    return worker.run({ key, inputs, backend: this.settings.backend, executionProvider: this.settings.executionProvider, ...(program === undefined ? {} : { program }) });
  }

  async run(args: readonly tf.Tensor[]): Promise<tf.Tensor[]> {
    const clients = this.node.attrs.clients as number;
    const [own, ...others] = rowsOf(clients, Math.min(this.settings.workers + 1, clients)) as [number, ...number[]];
    const ids = [...new Set(this.node.inputs)];
    const argOf = (id: number) => args[this.node.inputs.indexOf(id)]!;
    const host = new Map(ids.map((id) => [id, { data: argOf(id).dataSync() as HostData["data"], shape: argOf(id).shape, dtype: argOf(id).dtype as HostData["dtype"] }]));
    let begin = own;
    const remote = others.map((count, w) => this.onWorker(w, (begin += count) - count, count, host));
    // This thread runs the first slice meanwhile, on a view of its rows.
    const slices = ids.map((id) => (this.batched.has(id) ? tf.slice(argOf(id), 0, own) : argOf(id)));
    let local: tf.Tensor[] = [];
    try {
      local = await this.localSlice(own).run(slices);
      const results = await Promise.all(remote);
      for (const data of results.flatMap((r) => r.inputs)) this.spare.set(data.byteLength, [...(this.spare.get(data.byteLength) ?? []), data.buffer as ArrayBuffer]);
      return this.node.outputs.map((id, i) => {
        const type = this.types[id]!;
        const parts = [local[i]!.dataSync() as HostData["data"], ...results.map((r) => r.outputs[i]!.data)];
        const data = new (parts[0]!.constructor as new (n: number) => HostData["data"])(parts.reduce((n, p) => n + p.length, 0));
        let at = 0;
        for (const p of parts) {
          data.set(p, at);
          at += p.length;
        }
        return tf.tensor(data, type.shape as number[], type.dtype);
      });
    } finally {
      tf.dispose([...local, ...slices.filter((_, i) => this.batched.has(ids[i]!))]);
    }
  }

  dispose(): void {
    for (const key of this.keys.values()) releaseOnWorkers(key);
    for (const executable of this.local.values()) executable.dispose();
  }
}

/** A run of top-level nodes, compiled on this thread with the backend's lowering. */
function localPart(program: ProgramIR, nodes: readonly Node[], inputs: readonly number[], outputs: readonly number[], lowering: Lowering): Part {
  const executable = lowering.compile({ ...program, name: `${program.name} part`, graph: { inputs, nodes, outputs }, inputTree: inputs.map((_, i) => i), outputTree: outputs.map((_, i) => i) });
  return { inputs, outputs, run: (args) => executable.run(args), dispose: () => executable.dispose() };
}

/** The parts of a program whose top level has client loops, with what each takes and gives. */
function cut(program: ProgramIR, lowering: Lowering, settings: ShardSettings): Part[] {
  const groups: Node[][] = [];
  for (const node of program.graph.nodes) {
    const last = groups[groups.length - 1];
    if (node.op === "client_loop" || last === undefined || last[0]!.op === "client_loop") groups.push([node]);
    else last.push(node);
  }
  const usedAfter = groups.map((_, g) => new Set([...groups.slice(g + 1).flat().flatMap((n) => n.inputs), ...program.graph.outputs]));
  return groups.flatMap((nodes, g): Part[] => {
    if (nodes[0]!.op === "client_loop") return [new ShardedLoop(nodes[0]!, program.values, lowering, settings)];
    const produced = new Set(nodes.flatMap((n) => n.outputs));
    const inputs = [...new Set(nodes.flatMap((n) => n.inputs).filter((id) => !produced.has(id)))];
    const outputs = [...produced].filter((id) => usedAfter[g]!.has(id));
    return outputs.length === 0 ? [] : [localPart(program, nodes, inputs, outputs, lowering)];
  });
}

class ShardedExecutable implements Executable {
  /** Per part, the values whose last use it is. */
  private readonly releases: number[][];

  constructor(
    private readonly program: ProgramIR,
    private readonly parts: readonly Part[],
  ) {
    const lastUse = new Map<number, number>();
    parts.forEach((part, p) => part.inputs.forEach((id) => lastUse.set(id, p)));
    const kept = new Set([...program.graph.inputs, ...program.graph.outputs]);
    this.releases = parts.map((_, p) => [...lastUse].filter(([id, last]) => last === p && !kept.has(id)).map(([id]) => id));
  }

  async run(inputs: readonly tf.Tensor[]): Promise<tf.Tensor[]> {
    const env = new Map<number, tf.Tensor>();
    this.program.graph.inputs.forEach((id, i) => env.set(id, inputs[i]!));
    const owned = () => [...env.entries()].filter(([id]) => !this.program.graph.inputs.includes(id)).map(([, t]) => t);
    try {
      for (const [p, part] of this.parts.entries()) {
        const outs = await part.run(part.inputs.map((id) => env.get(id)!));
        part.outputs.forEach((id, i) => env.set(id, outs[i]!));
        for (const id of this.releases[p]!) {
          env.get(id)!.dispose();
          env.delete(id);
        }
      }
    } catch (error) {
      tf.dispose(owned());
      throw error;
    }
    // Outputs the caller would not own (an input, the same tensor twice) are cloned.
    const seen = new Set<tf.Tensor>(inputs);
    return this.program.graph.outputs.map((id) => {
      const t = env.get(id)!;
      if (seen.has(t)) return t.clone();
      seen.add(t);
      return t;
    });
  }

  dispose(): void {
    this.parts.forEach((part) => part.dispose());
  }
}

/**
 * `whole` for programs without client loops at their top level; the others are cut into parts
 * (compiled with `slices`), their client loops shared out between this thread and `settings.workers` workers.
 */
export function shardedLowering(whole: Lowering, slices: Lowering, settings: ShardSettings): Lowering {
  return {
    policy: whole.policy,
    compile(program) {
      if (!program.graph.nodes.some((n) => n.op === "client_loop")) return whole.compile(program);
      return new ShardedExecutable(program, cut(program, slices, settings));
    },
  };
}
