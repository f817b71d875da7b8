/**
 * A worker thread's side of src/runtime/worker-pool.ts: compiles the shard programs it is
 * sent (a client_loop over a slice of the cohort) with its backend's lowering, runs them on
 * the data it is sent, and sends the outputs' data back with the input arrays, which the
 * next run reuses. Requests run one at a time.
 */
import { parentPort } from "node:worker_threads";
import * as tf from "@tensorflow/tfjs";
import { activateBackend, type BackendName } from "./backend.js";
import type { Executable } from "./executable.js";
import { sliceLowering } from "./lowering.js";
import type { HostData, ShardResult, WorkerMessage, WorkerReply } from "./worker-pool.js";

const port = parentPort!;
const compiled = new Map<string, Executable>();

async function run(message: Extract<WorkerMessage, { kind: "run" }>): Promise<ShardResult> {
  const backend = await activateBackend(message.backend as BackendName, message.executionProvider);
  let executable = compiled.get(message.key);
  if (executable === undefined) {
    if (message.program === undefined) throw new Error(`internal: shard program ${message.key} was never sent`);
    executable = sliceLowering(backend, message.executionProvider).compile(message.program);
    compiled.set(message.key, executable);
  }
  const inputs = message.inputs.map((h) => tf.tensor(h.data, [...h.shape], h.dtype));
  let outputs: tf.Tensor[] = [];
  try {
    outputs = await executable.run(inputs);
    // On tfjs's cpu backend dataSync is the tensor's own array, which an output may share with an input or another output.
    const taken = new Set<ArrayBufferLike>();
    const own = (data: HostData["data"]) => (taken.has(data.buffer) ? data.slice() : (taken.add(data.buffer), data));
    const data = outputs.map((t) => ({ data: own(t.dataSync() as HostData["data"]), shape: t.shape, dtype: t.dtype as HostData["dtype"] }));
    return { outputs: data, inputs: message.inputs.map((h) => h.data).filter((d) => !taken.has(d.buffer)) };
  } finally {
    tf.dispose([...inputs, ...outputs]);
  }
}

let queue = Promise.resolve();

port.on("message", (message: WorkerMessage) => {
  queue = queue.then(async () => {
    if (message.kind === "release") {
      compiled.get(message.key)?.dispose();
      compiled.delete(message.key);
      return;
    }
    let reply: WorkerReply;
    try {
      reply = { id: message.id, ...(await run(message)) };
    } catch (error) {
      reply = { id: message.id, error: (error as Error).message };
    }
    const transfer = "outputs" in reply ? [...reply.outputs.map((h) => h.data.buffer), ...reply.inputs.map((d) => d.buffer)] : [];
    port.postMessage(reply, transfer as ArrayBuffer[]);
  });
});
