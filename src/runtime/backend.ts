/**
 * Backends: which TensorFlow.js backend runs the lowered kernels. The default is the fastest
 * on CPU (wasm, SIMD); `cpu` is tfjs's plain JavaScript backend; `tensorflow` is native
 * TensorFlow through @tensorflow/tfjs-node-gpu (CUDA) or @tensorflow/tfjs-node, which the user
 * installs (their install scripts download libtensorflow, so they are not dependencies).
 * Chosen by the `backend` option or FEDTENSOR_BACKEND; a backend that fails to start is an
 * FT301 error, never a silent fallback.
 */
import * as tf from "@tensorflow/tfjs";
import { ftError } from "../errors/error.js";

export const backendNames = ["wasm", "cpu", "tensorflow"] as const;
export type BackendName = (typeof backendNames)[number];

/** The backend a run asked for: the option, else FEDTENSOR_BACKEND, else wasm. */
export function requestedBackend(option: string | undefined): BackendName {
  const name = option ?? process.env.FEDTENSOR_BACKEND ?? "wasm";
  if (!(backendNames as readonly string[]).includes(name)) {
    const source = option !== undefined ? "backend option" : "FEDTENSOR_BACKEND";
    throw ftError("FT305", { option: source, why: `unknown backend '${name}'; choose one of ${backendNames.join(", ")}` });
  }
  return name as BackendName;
}

async function registerNative(): Promise<void> {
  const attempts: string[] = [];
  for (const pkg of ["@tensorflow/tfjs-node-gpu", "@tensorflow/tfjs-node"]) {
    try {
      await import(pkg);
      return;
    } catch (error) {
      attempts.push(`${pkg}: ${(error as Error).message.split("\n")[0]}`);
    }
  }
  throw ftError("FT301", {
    backend: "tensorflow",
    why: `it needs @tensorflow/tfjs-node-gpu (CUDA) or @tensorflow/tfjs-node, and neither loads (${attempts.join("; ")})`,
  });
}

const registered = new Set<string>(["cpu"]);

async function register(name: BackendName): Promise<void> {
  if (registered.has(name)) return;
  if (name === "wasm") await import("@tensorflow/tfjs-backend-wasm");
  else await registerNative();
  registered.add(name);
}

/** Makes `name` the active tfjs backend, or throws FT301 saying why it cannot start. */
export async function activateBackend(name: BackendName): Promise<BackendName> {
  if (tf.getBackend() === name) return name;
  await register(name);
  let ok: boolean;
  try {
    ok = await tf.setBackend(name);
    await tf.ready();
  } catch (error) {
    throw ftError("FT301", { backend: name, why: (error as Error).message });
  }
  // tf.setBackend reports failure by returning false rather than throwing.
  if (!ok || tf.getBackend() !== name) {
    throw ftError("FT301", { backend: name, why: "TensorFlow.js could not initialise it (setBackend returned false)" });
  }
  return name;
}

/**
 * Activates the backend a program would run on (the option, else FEDTENSOR_BACKEND, else
 * wasm). Call it before making tfjs tensors of your own, so they live on that backend.
 */
export async function useBackend(name?: string): Promise<BackendName> {
  return activateBackend(requestedBackend(name));
}
