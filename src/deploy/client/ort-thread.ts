/**
 * onnxruntime-node on a worker thread, as the client core's ONNX runtime. onnxruntime-node's
 * run() computes on the thread that calls it (its promise settles after one synchronous native
 * call), so a client training on its main thread could answer nothing meanwhile: not the secure
 * round's key setup, which the server sends with the task so that it runs while the clients
 * train (docs/deployment.md, "Secure rounds"). Here the sessions live on one worker thread and
 * the main thread only posts feeds and takes results. Used where the client runs compiled
 * (the worker script beside this module); from TypeScript sources the client trains on its
 * main thread.
 */
import { Worker } from "node:worker_threads";
import type { OrtLike, OrtSessionLike, OrtTensorLike } from "./core.js";

/** What crosses to the worker and back: a tensor's type, data and dims (feeds copied by structured clone; outputs moved back, ort-thread-worker.ts). */
export interface PlainTensor {
  readonly type: string;
  readonly data: Float32Array | Int32Array | Uint8Array;
  readonly dims: readonly number[];
}

export type OrtThreadRequest =
  | { readonly kind: "create"; readonly call: number; readonly session: number; readonly model: Uint8Array; readonly options: object }
  | { readonly kind: "run"; readonly call: number; readonly session: number; readonly feeds: Record<string, PlainTensor> }
  | { readonly kind: "release"; readonly call: number; readonly session: number };

/** A request's answer; first of all, once onnxruntime-node has loaded on the thread, `ready`. */
export type OrtThreadReply = { readonly call: number; readonly outputs?: Record<string, PlainTensor> } | { readonly call: number; readonly error: string } | { readonly ready: true };

const workerScript = new URL("./ort-thread-worker.js", import.meta.url);

/** onnxruntime-node, loaded when first needed, logging errors only (on the worker thread, or on the client's own from TypeScript sources). */
export async function loadOnnxruntimeNode(): Promise<typeof import("onnxruntime-node")> {
  const ortModule = await import("onnxruntime-node");
  const ort = ((ortModule as { default?: unknown }).default ?? ortModule) as typeof import("onnxruntime-node");
  ort.env.logLevel = "error";
  return ort;
}

/** Whether this module runs compiled, with the worker script beside it. */
export const ortThreadAvailable = import.meta.url.endsWith(".js");

class Tensor implements OrtTensorLike {
  constructor(
    readonly type: string,
    readonly data: Float32Array | Int32Array | Uint8Array,
    readonly dims: readonly number[],
  ) {}
}

/** An OrtLike whose sessions run on one worker thread; close() ends the thread. */
export function ortOnThread(): OrtLike & { close(): Promise<void> } {
  const worker = new Worker(workerScript);
  const pending = new Map<number, { resolve(reply: OrtThreadReply): void; reject(error: Error): void }>();
  let nextCall = 0;
  let nextSession = 0;
  let failed: Error | undefined;
  const fail = (error: Error) => {
    failed ??= error;
    for (const call of pending.values()) call.reject(error);
    pending.clear();
  };
  // Terminating the thread inside onnxruntime-node's native code aborts the process (seen while its
  // module loads: a client refused at once closes within milliseconds), so close() waits for the
  // load to end and for the runs in flight.
  let loaded!: () => void;
  const settled = new Promise<void>((resolve) => (loaded = resolve));
  worker.on("message", (reply: OrtThreadReply) => {
    if ("ready" in reply) {
      // Held while it loads (close() waits for that); an idle worker must not keep the process alive.
      if (pending.size === 0) worker.unref();
      return loaded();
    }
    const call = pending.get(reply.call);
    pending.delete(reply.call);
    // An idle worker must not keep the process alive.
    if (pending.size === 0) worker.unref();
    if ("error" in reply) call?.reject(new Error(reply.error));
    else call?.resolve(reply);
  });
  worker.on("error", (error) => {
    fail(error);
    loaded();
  });
  worker.on("exit", (code) => {
    fail(new Error(`the onnxruntime worker thread exited (code ${code})`));
    loaded();
  });
  const inFlight = new Set<Promise<OrtThreadReply>>();
  const ask = (request: OrtThreadRequest extends infer R ? (R extends unknown ? Omit<R, "call"> : never) : never): Promise<OrtThreadReply> => {
    if (failed !== undefined) return Promise.reject(failed);
    const call = nextCall++;
    if (pending.size === 0) worker.ref();
    const answer = new Promise<OrtThreadReply>((resolve, reject) => pending.set(call, { resolve, reject }));
    worker.postMessage({ ...request, call } as OrtThreadRequest);
    inFlight.add(answer);
    void answer.catch(() => {}).finally(() => inFlight.delete(answer));
    return answer;
  };
  return {
    Tensor,
    InferenceSession: {
      async create(model: Uint8Array, options: object = {}): Promise<OrtSessionLike> {
        const session = nextSession++;
        await ask({ kind: "create", session, model, options });
        return {
          async run(feeds) {
            const plain = Object.fromEntries(Object.entries(feeds).map(([name, t]) => [name, { type: t.type, data: t.data as PlainTensor["data"], dims: t.dims }]));
            const { outputs } = (await ask({ kind: "run", session, feeds: plain })) as { outputs: Record<string, PlainTensor> };
            return Object.fromEntries(Object.entries(outputs).map(([name, t]) => [name, new Tensor(t.type, t.data, t.dims)]));
          },
          async release() {
            if (failed === undefined) await ask({ kind: "release", session });
          },
        };
      },
    },
    close: async () => {
      await settled;
      await Promise.allSettled(inFlight);
      await worker.terminate();
    },
  };
}
