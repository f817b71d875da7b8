/**
 * The webgpu backend's start: TensorFlow.js's WebGPU kernels (@tensorflow/tfjs-backend-webgpu)
 * on a GPU that Dawn, Google's WebGPU implementation, finds through the `webgpu` npm package
 * (Dawn for Node, prebuilt in the package for Linux, macOS and Windows; an optional dependency,
 * so an install where it cannot load still succeeds). On Linux Dawn reaches the GPU through
 * Vulkan: NVIDIA's driver brings the Vulkan ICD. Every failure is FT301 naming what is missing.
 *
 * FedTensor asks Dawn for the adapter itself rather than through the package's own backend
 * factory, which assumes a browser's `navigator.gpu` and fails without saying why. A software
 * adapter (Mesa's llvmpipe or lavapipe, SwiftShader) runs only when the user chose it with
 * FEDTENSOR_WEBGPU_DAWN: a GPU backend that quietly ran on the CPU would be a silent fallback.
 */
import * as tf from "@tensorflow/tfjs";
import { ftError } from "../errors/error.js";
import { probeDawn } from "./dawn-probe.js";

/** Where Dawn's create() options come from: space-separated, e.g. `backend=opengl adapter=NAME`. */
export const DAWN_OPTIONS_VARIABLE = "FEDTENSOR_WEBGPU_DAWN";

/** The pinned version of the `webgpu` package, for install hints. */
const WEBGPU_PACKAGE = "webgpu@0.6.2";

const SOFTWARE_ADAPTER = /llvmpipe|lavapipe|swiftshader|software/i;

/** What the backend runs on, once started: the adapter Dawn chose. */
export interface WebGpuAdapter {
  readonly device: string;
  readonly description: string;
  readonly vendor: string;
  readonly software: boolean;
  /** WebGPU core, or compatibility mode (OpenGL backends). */
  readonly featureLevel: "core" | "compatibility";
}

let started: WebGpuAdapter | undefined;
let startedDevice: DawnDevice | undefined;

/** The adapter the webgpu backend runs on, or undefined if it has not started in this process. */
export function webGpuAdapter(): WebGpuAdapter | undefined {
  return started;
}

/** Dawn's create() options from FEDTENSOR_WEBGPU_DAWN. */
export function dawnOptions(value = process.env[DAWN_OPTIONS_VARIABLE]): string[] {
  return (value ?? "").split(/\s+/).filter((option) => option.length > 0);
}

const message = (error: unknown) => String((error as Error)?.message ?? error);
const firstLine = (error: unknown) => message(error).split("\n")[0]!;
const oneLine = (error: unknown) => message(error).trim().replace(/\s*\n\s*/g, "; ");

/** The parts of Dawn's WebGPU objects used here (typed locally: the package is optional). */
interface DawnAdapter {
  readonly info: { readonly vendor: string; readonly device: string; readonly description: string; readonly isFallbackAdapter?: boolean };
  readonly limits: Readonly<Record<string, number>>;
  readonly features: ReadonlySet<string>;
  requestDevice(descriptor: { requiredFeatures: string[]; requiredLimits: Record<string, number> }): Promise<unknown>;
}
interface DawnGpu {
  requestAdapter(options: { powerPreference?: string; featureLevel?: string }): Promise<DawnAdapter | null>;
}
/** A device's error scopes: WebGPU reports a failed kernel or allocation there, not by throwing. */
interface DawnDevice {
  pushErrorScope(filter: "validation" | "out-of-memory" | "internal"): void;
  popErrorScope(): Promise<{ readonly message: string } | null>;
}
type Dawn = { create(options: string[]): DawnGpu; globals: Record<string, unknown> };

/** A variable, so that the optional package's absence is a run-time FT301 rather than a compile error. */
const DAWN_PACKAGE: string = "webgpu";

async function loadDawn(): Promise<Dawn> {
  try {
    return (await import(DAWN_PACKAGE)) as Dawn;
  } catch (error) {
    throw ftError("FT301", {
      backend: "webgpu",
      why: `the webgpu package (Dawn for Node, an optional dependency) does not load (${firstLine(error)}); install it with npm i ${WEBGPU_PACKAGE}`,
    });
  }
}

/** Whether an adapter runs on the CPU: WebGPU's fallback adapter, or one of the software renderers by name. */
export function isSoftwareAdapter(info: DawnAdapter["info"]): boolean {
  return info.isFallbackAdapter === true || SOFTWARE_ADAPTER.test(`${info.device} ${info.description}`);
}

function describe(adapter: DawnAdapter, featureLevel: WebGpuAdapter["featureLevel"]): WebGpuAdapter {
  const info = adapter.info;
  return { device: info.device, description: info.description, vendor: info.vendor, software: isSoftwareAdapter(info), featureLevel };
}

/** FT301 for a Dawn that finds no adapter; `said` is what Dawn printed meanwhile (dawn-probe.ts), if anything. */
function noAdapter(chosen: boolean, said: string) {
  return ftError("FT301", {
    backend: "webgpu",
    why:
      (said === "" ? "Dawn finds no GPU adapter" : `Dawn finds no GPU adapter (Dawn says: ${said})`) +
      ": on Linux it needs a Vulkan driver (the NVIDIA driver's Vulkan ICD, or Mesa's) and the Vulkan loader libvulkan1; `vulkaninfo --summary` lists what the loader sees" +
      (chosen
        ? ` (${DAWN_OPTIONS_VARIABLE}='${dawnOptions().join(" ")}'; Dawn's OpenGL backends without a display need EGL_PLATFORM=surfaceless)`
        : `; to run on Mesa's CPU renderer instead, set ${DAWN_OPTIONS_VARIABLE}=backend=opengl and EGL_PLATFORM=surfaceless`),
  });
}

/**
 * Dawn's adapter: WebGPU core first; compatibility mode (what Dawn's OpenGL backends give) only
 * when the user chose Dawn's options. FT301 when there is none, or only a software one unasked.
 */
async function requestAdapter(gpu: DawnGpu, chosen: boolean): Promise<{ adapter: DawnAdapter; described: WebGpuAdapter }> {
  const ask = async (options: Parameters<DawnGpu["requestAdapter"]>[0]) => {
    try {
      return await gpu.requestAdapter(options);
    } catch (error) {
      // Dawn checks its create() options here: a bad one is the user's, else Dawn's failure.
      if (chosen) throw ftError("FT305", { option: DAWN_OPTIONS_VARIABLE, why: `Dawn refuses '${dawnOptions().join(" ")}': ${oneLine(error)}` });
      throw ftError("FT301", { backend: "webgpu", why: `Dawn fails to look for an adapter (${oneLine(error)})` });
    }
  };
  const core = await ask({ powerPreference: "high-performance" });
  const compatibility = core === null && chosen ? await ask({ featureLevel: "compatibility" }) : null;
  const adapter = core ?? compatibility;
  if (adapter === null) throw noAdapter(chosen, "");
  const described = describe(adapter, core !== null ? "core" : "compatibility");
  if (described.software && !chosen) {
    throw ftError("FT301", {
      backend: "webgpu",
      why: `Dawn finds only a software adapter (${described.device}), which runs on the CPU; to use it anyway, name it in ${DAWN_OPTIONS_VARIABLE} (e.g. adapter=${described.device})`,
    });
  }
  return { adapter, described };
}

/** The limits tfjs's own factory raises to the adapter's, and storage buffers per stage, which compatibility mode keeps low. */
const DEVICE_LIMITS = [
  "maxComputeWorkgroupStorageSize",
  "maxComputeWorkgroupsPerDimension",
  "maxStorageBufferBindingSize",
  "maxBufferSize",
  "maxComputeWorkgroupSizeX",
  "maxComputeInvocationsPerWorkgroup",
  "maxStorageBuffersPerShaderStage",
] as const;

/** The device tfjs's WebGPU backend wants: the adapter's own limits, as its built-in factory asks. */
async function requestDevice(adapter: DawnAdapter): Promise<DawnDevice> {
  const requiredLimits = Object.fromEntries(DEVICE_LIMITS.map((name) => [name, adapter.limits[name]!]));
  try {
    return (await adapter.requestDevice({ requiredFeatures: adapter.features.has("timestamp-query") ? ["timestamp-query"] : [], requiredLimits })) as DawnDevice;
  } catch (error) {
    throw ftError("FT301", { backend: "webgpu", why: `the adapter refuses a device (${firstLine(error)})` });
  }
}

/**
 * Registers tfjs's `webgpu` backend on Dawn's adapter, or throws FT301 saying what is missing.
 * tfjs's WebGPU backend reads `navigator.gpu`, which Node 20 lacks: Dawn's is put there.
 */
export async function registerWebGpu(): Promise<void> {
  const dawn = await loadDawn();
  // Imported before navigator.gpu exists, so the package registers no factory of its own.
  const { WebGPUBackend } = await import("@tensorflow/tfjs-backend-webgpu");
  const options = dawnOptions();
  // Looked for in a child first, whose stderr takes Dawn's native warnings: none reach the
  // user's terminal when there is no adapter, and what Dawn said goes into FT301's text.
  const probe = await probeDawn(DAWN_PACKAGE, options, options.length > 0);
  if (probe !== undefined && !probe.found) throw noAdapter(options.length > 0, probe.said);
  let gpu: DawnGpu;
  try {
    Object.assign(globalThis, dawn.globals);
    gpu = dawn.create(options);
  } catch (error) {
    throw ftError("FT305", { option: DAWN_OPTIONS_VARIABLE, why: `Dawn refuses '${options.join(" ")}': ${oneLine(error)}` });
  }
  const { adapter, described } = await requestAdapter(gpu, options.length > 0);
  const device = await requestDevice(adapter);
  const host = globalThis as { navigator?: { gpu?: DawnGpu } };
  if (host.navigator === undefined) Object.defineProperty(globalThis, "navigator", { value: {}, configurable: true, writable: true });
  Object.defineProperty(host.navigator, "gpu", { value: gpu, configurable: true });
  if (tf.findBackendFactory("webgpu") !== null) tf.removeBackend("webgpu");
  tf.registerBackend("webgpu", () => new WebGPUBackend(device as ConstructorParameters<typeof WebGPUBackend>[0], adapter.info as ConstructorParameters<typeof WebGPUBackend>[1]));
  started = described;
  startedDevice = device;
}

/** The parts of tfjs's WebGPUBackend that flush its queued commands to the GPU. */
interface QueueingBackend {
  commandEncoder: unknown;
  endComputePassEncoder(): void;
  submitQueue(): void;
}

/**
 * Runs `run` (which dispatches webgpu kernels) and throws what the GPU reported: a shader that
 * does not compile, a kernel that fails validation, an allocation out of memory. WebGPU
 * reports these only in error scopes (or on the console), and a failed kernel leaves garbage
 * in its output; unchecked, a wrong result would pass as a right one. The commands tfjs still
 * holds are submitted first, so that every kernel of the run is inside the scopes.
 */
export async function withDeviceErrors<T>(run: () => Promise<T>, dispose: (result: T) => void): Promise<T> {
  const device = startedDevice!;
  // Popped in reverse: validation, then out-of-memory, then internal.
  (["internal", "out-of-memory", "validation"] as const).forEach((scope) => device.pushErrorScope(scope));
  let outcome: { result: T } | { thrown: unknown };
  try {
    outcome = { result: await run() };
    const backend = tf.backend() as unknown as QueueingBackend;
    if (backend.commandEncoder) {
      backend.endComputePassEncoder();
      backend.submitQueue();
    }
  } catch (error) {
    outcome = { thrown: error };
  }
  const [validation, outOfMemory, internal] = [await device.popErrorScope(), await device.popErrorScope(), await device.popErrorScope()];
  if ("thrown" in outcome) throw outcome.thrown;
  const failure = outOfMemory ?? validation ?? internal;
  if (failure === null) return outcome.result;
  dispose(outcome.result);
  // "out of memory" in the message makes runFailure's FT306 of it.
  throw new Error(`webgpu: ${outOfMemory ? "out of memory" : "a kernel failed"}: ${oneLine(failure.message)}`);
}
