/**
 * The worker thread of ort-thread.ts: holds the client's onnxruntime-node sessions and runs
 * them on the feeds it is sent, one request at a time, in order.
 */
import { parentPort } from "node:worker_threads";
import type { InferenceSession, Tensor as OrtTensor } from "onnxruntime-node";
import { loadOnnxruntimeNode, type OrtThreadReply, type OrtThreadRequest, type PlainTensor } from "./ort-thread.js";

const port = parentPort!;
const ort = await loadOnnxruntimeNode();
const sessions = new Map<number, InferenceSession>();

async function answer(request: OrtThreadRequest): Promise<OrtThreadReply> {
  switch (request.kind) {
    case "create":
      sessions.set(request.session, await ort.InferenceSession.create(request.model, request.options));
      return { call: request.call };
    case "run": {
      const session = sessions.get(request.session);
      if (session === undefined) throw new Error(`internal: no session ${request.session} on the onnxruntime thread`);
      const feeds = Object.fromEntries(Object.entries(request.feeds).map(([name, t]) => [name, new ort.Tensor(t.type as OrtTensor.Type, t.data, t.dims)]));
      const results = await session.run(feeds);
      const outputs: Record<string, PlainTensor> = {};
      for (const [name, t] of Object.entries(results)) outputs[name] = { type: t.type, data: t.data as PlainTensor["data"], dims: t.dims };
      return { call: request.call, outputs };
    }
    case "release":
      await sessions.get(request.session)?.release();
      sessions.delete(request.session);
      return { call: request.call };
  }
}

port.postMessage({ ready: true } satisfies OrtThreadReply);
let queue = Promise.resolve();
port.on("message", (request: OrtThreadRequest) => {
  queue = queue.then(async () => {
    try {
      const reply = await answer(request);
      // The outputs are this thread's own, fresh from the run: moved to the client's thread, not copied.
      const buffers = "outputs" in reply ? new Set(Object.values(reply.outputs!).map((t) => t.data.buffer).filter((b): b is ArrayBuffer => b instanceof ArrayBuffer)) : [];
      port.postMessage(reply, [...buffers]);
    } catch (error) {
      port.postMessage({ call: request.call, error: (error as Error).message } satisfies OrtThreadReply);
    }
  });
});
