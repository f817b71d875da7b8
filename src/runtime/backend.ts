/**
 * Backends: what runs the lowered programs. `onnx` (the default) compiles a program to one
 * ONNX graph and runs it with onnxruntime-node (a dependency; its CPU binaries ship in the npm
 * package), on its CPU or, where the user installed its CUDA provider, on the GPU. The others
 * run TensorFlow.js kernels, for browsers and native TensorFlow users: `wasm` (SIMD), `cpu`
 * (plain JavaScript), `webgpu` (a GPU through Dawn, see webgpu.ts), and `tensorflow`, native
 * TensorFlow through @tensorflow/tfjs-node-gpu (CUDA) or @tensorflow/tfjs-node, which the
 * user installs (their install scripts download libtensorflow, so they are not dependencies).
 * Chosen by the `backend` option or FEDTENSOR_BACKEND; a backend that fails to start is an
 * FT301 error, never a silent fallback.
 */
import * as tf from "@tensorflow/tfjs";
import { FedTensorError, ftError } from "../errors/error.js";
import { onnxRuntime, probeProvider } from "../lower/onnx/session.js";
import { registerWebGpu } from "./webgpu.js";

// TensorFlow.js's cpu backend prints "Hi, looks like you are running TensorFlow.js in Node.js
// ... install our node backend" on its first tensor in Node (tfjs-backend-cpu's write(), through
// tfjs-core's log.warn). Its one switch is tfjs-core's PROD flag: log.warn and log.log print
// nothing under it, and in tfjs 4.22 it changes nothing else. The advice does not apply here
// (the default backend is onnx; the native one is `tensorflow`), so every FedTensor process
// sets it. The one tfjs warning this hides that mattered, why a backend failed to initialise,
// activateTensorHome reads from the backend's factory itself.
tf.enableProdMode();

/**
 * The names of the backends a program can run on (`--backend`, `FEDTENSOR_BACKEND`,
 * RunOptions.backend).
 *
 * @example
 * for (const name of backendNames) console.log(name); // wasm, cpu, webgpu, tensorflow, onnx
 */
export const backendNames = ["wasm", "cpu", "webgpu", "tensorflow", "onnx"] as const;
/**
 * A backend's name: one of backendNames.
 *
 * @example
 * const backend: BackendName = await useBackend("cpu");
 */
export type BackendName = (typeof backendNames)[number];

/**
 * The default: the fastest on CPU. A FedAvg round of the 2NN takes 0.04 s on onnx, 0.36 s on
 * wasm and 0.28 s in PyTorch on a 2-core machine (bench/fedavg-round.ts, docs/benchmarks.md).
 */
export const defaultBackend: BackendName = "onnx";

/** The backend a run asked for: the option, else FEDTENSOR_BACKEND, else the default. */
export function requestedBackend(option: string | undefined): BackendName {
  const name = option ?? process.env.FEDTENSOR_BACKEND ?? defaultBackend;
  if (!(backendNames as readonly string[]).includes(name)) {
    const source = option !== undefined ? "backend option" : "FEDTENSOR_BACKEND";
    throw ftError("FT305", { option: source, why: `unknown backend '${name}'; choose one of ${backendNames.join(", ")}` });
  }
  return name as BackendName;
}

/**
 * The onnx backend's execution provider: the option, else FEDTENSOR_EXECUTION_PROVIDER, else
 * cpu. Other backends take none.
 */
export function requestedProvider(backend: BackendName, option: string | undefined): string | undefined {
  if (backend !== "onnx") {
    if (option !== undefined) throw ftError("FT305", { option: "executionProvider", why: `only the onnx backend takes one, and this run is on ${backend}` });
    return undefined;
  }
  return option ?? process.env.FEDTENSOR_EXECUTION_PROVIDER ?? "cpu";
}

/** The tfjs backend holding the tensors programs take and return; onnx's is cpu, whose tensors onnxruntime reads in place. */
type TensorHome = "wasm" | "cpu" | "webgpu" | "tensorflow";
const tensorHome: Record<BackendName, TensorHome> = { wasm: "wasm", cpu: "cpu", webgpu: "webgpu", tensorflow: "tensorflow", onnx: "cpu" };

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

async function register(name: TensorHome): Promise<void> {
  if (registered.has(name)) return;
  if (name === "wasm") await import("@tensorflow/tfjs-backend-wasm");
  else if (name === "webgpu") await registerWebGpu();
  else await registerNative();
  registered.add(name);
}

async function activateTensorHome(name: TensorHome): Promise<void> {
  if (tf.getBackend() === name) return;
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
    throw ftError("FT301", { backend: name, why: `TensorFlow.js could not initialise it (${await initialisationFailure(name)})` });
  }
}

/**
 * Why a backend's initialisation failed: tfjs catches its factory's error and would only log it
 * (not in PROD mode), so the factory runs once more here for the error itself.
 */
async function initialisationFailure(name: TensorHome): Promise<string> {
  const factory = tf.findBackendFactory(name);
  if (factory === null) return "no such backend is registered";
  try {
    await factory();
    return "setBackend returned false";
  } catch (error) {
    return firstLine(error);
  }
}

const firstLine = (error: unknown) => String((error as Error).message ?? error).split("\n")[0]!;

/** Loads onnxruntime-node and checks that `provider` runs a model, or throws FT301 saying why not. */
async function startOnnxRuntime(provider: string): Promise<void> {
  let ort: Awaited<ReturnType<typeof onnxRuntime>>;
  try {
    ort = await onnxRuntime();
  } catch (error) {
    throw ftError("FT301", { backend: "onnx", why: `onnxruntime-node does not load (${firstLine(error)}); reinstall it with npm ci` });
  }
  const known = ort.listSupportedBackends().map((b) => b.name);
  if (!known.includes(provider)) {
    throw ftError("FT305", { option: "executionProvider", why: `unknown execution provider '${provider}'; onnxruntime-node here has ${known.join(", ")}` });
  }
  try {
    await probeProvider(provider);
  } catch (error) {
    const hint = provider === "cuda" ? "; install its libraries with ONNXRUNTIME_NODE_INSTALL=cuda12 node node_modules/onnxruntime-node/script/install (see README, Backends)" : "";
    throw ftError("FT301", { backend: "onnx", why: `execution provider ${provider} does not start (${firstLine(error)})${hint}` });
  }
}

/** Makes `name` the active backend, or throws FT301 saying why it cannot start. */
export async function activateBackend(name: BackendName, executionProvider?: string): Promise<BackendName> {
  if (name === "onnx") await startOnnxRuntime(executionProvider ?? "cpu");
  await activateTensorHome(tensorHome[name]);
  return name;
}

/**
 * Activates the backend a program would run on (the option, else FEDTENSOR_BACKEND, else the
 * default). Call it before making tfjs tensors of your own, so they live on that backend.
 */
export async function useBackend(name?: string, executionProvider?: string): Promise<BackendName> {
  const backend = requestedBackend(name);
  return activateBackend(backend, requestedProvider(backend, executionProvider));
}

/**
 * How the backends report running out of memory: tfjs wasm aborts ("Aborted()") when its
 * 32-bit heap cannot grow past 4 GiB, or traps ("memory access out of bounds", as a
 * 1,000-client round of the 2NN does); V8 cannot allocate an ArrayBuffer; onnxruntime's
 * allocator fails. Messages from worker threads arrive as plain Errors, so the messages are
 * what is matched.
 */
const OUT_OF_MEMORY = /memory access out of bounds|^Aborted\(\)|out of memory|cannot enlarge memory|array buffer allocation failed|failed to allocate memory|bad_alloc/i;

/** The error a failed run throws: FT306 for a backend out of memory, else the error as it is. */
export function runFailure(backend: BackendName, error: unknown): unknown {
  if (!(error instanceof Error) || !OUT_OF_MEMORY.test(error.message)) return error;
  return new FedTensorError("FT306", { backend, why: `${error.name}: ${error.message}` }, { cause: error });
}
