/**
 * Which onnxruntime-web execution provider the browser client trains on: WebGPU where the
 * browser gives a WebGPU adapter, wasm otherwise. The WebGPU build (/ort/ort.webgpu.min.mjs)
 * carries the wasm provider too, so one loaded module serves both, and a part whose WebGPU
 * session cannot be created (an op the WebGPU provider lacks and the CPU one cannot take over,
 * a device lost) falls back to wasm with the reason shown. Nodes the WebGPU provider has no
 * kernel for run on the CPU provider inside the same session (onnxruntime's own per-node
 * fallback; a part's Loop over its steps is one, its body's nodes are WebGPU's): their op types
 * are shown too. The first task's outputs are checked against wasm's, so that a wrong GPU result
 * (a broken driver, a precision the training cannot take) is caught before any update is sent.
 */
import type { OrtLike, OrtSessionLike, OrtTensorLike } from "../client/core.js";

export type ProviderName = "webgpu" | "wasm";

/** How the tab's training runs, for people (the status line) and tests (window.fedtensorClient). */
export interface BackendReport {
  provider: ProviderName;
  /** Why it is that provider: the adapter found, or why WebGPU is not used. */
  why: string;
  /** On WebGPU: the op types onnxruntime's WebGPU provider has no kernel for, run by its CPU provider. */
  cpuOps?: string[];
  /** The first WebGPU task against wasm: the largest difference, relative to each output's largest magnitude. */
  check?: { readonly relativeDifference: number; readonly tolerance: number };
}

/**
 * The largest relative difference tolerated between WebGPU's and wasm's outputs of one task.
 * Both compute in float32 but in other orders (GPU reductions are tree-shaped, fused
 * multiply-adds differ), and local training compounds that over its steps (the test's 150-step
 * round of the 2NN: ~2e-4). 1e-2 leaves room for rounds of a few thousand steps and still
 * catches a wrong result, which differs by far more.
 */
export const WEBGPU_TOLERANCE = 1e-2;

type OrtWeb = OrtLike & {
  env: { wasm: { wasmPaths: string; numThreads: number }; webgpu: { adapter?: unknown }; logLevel: string };
};

async function importOrt(file: string): Promise<OrtWeb> {
  // Served from onnxruntime-web's package by fedtensor serve; one thread (no cross-origin isolation needed).
  const ort = (await import(/* @vite-ignore */ `/ort/${file}` as string)) as OrtWeb;
  ort.env.wasm.wasmPaths = "/ort/";
  ort.env.wasm.numThreads = 1;
  ort.env.logLevel = "error";
  return ort;
}

interface GpuLike {
  requestAdapter(): Promise<{ readonly info?: { readonly vendor?: string; readonly architecture?: string }; readonly isFallbackAdapter?: boolean } | null>;
}

/** A WebGPU adapter, or why there is none. */
async function webGpuAdapter(): Promise<{ adapter: unknown; name: string } | { none: string }> {
  const gpu = (navigator as unknown as { gpu?: GpuLike }).gpu;
  if (gpu === undefined) return { none: isSecureContext ? "this browser has no WebGPU (navigator.gpu)" : "WebGPU needs a secure context (https or localhost)" };
  try {
    const adapter = await gpu.requestAdapter();
    if (adapter === null) return { none: "the browser gave no WebGPU adapter" };
    const name = [adapter.info?.vendor, adapter.info?.architecture].filter((s) => s !== undefined && s !== "").join(" ") || "unnamed";
    return { adapter, name: `${name}${adapter.isFallbackAdapter === true ? ", a software fallback adapter" : ""}` };
  } catch (error) {
    return { none: `requesting a WebGPU adapter failed: ${(error as Error).message}` };
  }
}

/**
 * onnxruntime-web, with its sessions on the chosen provider; `report` says which and is kept up
 * to date (a fallback to wasm changes it). `requested` "wasm" skips WebGPU (?ep=wasm).
 */
export async function loadBackend(requested: ProviderName | undefined, changed: (report: BackendReport) => void): Promise<{ ort: OrtLike; report: BackendReport }> {
  const found = requested === "wasm" ? { none: "wasm was asked for (?ep=wasm)" } : await webGpuAdapter();
  if ("none" in found) {
    const report: BackendReport = { provider: "wasm", why: found.none };
    return { ort: onProvider(await importOrt("ort.wasm.min.mjs"), "wasm"), report };
  }
  const ort = await importOrt("ort.webgpu.min.mjs");
  ort.env.webgpu.adapter = found.adapter;
  const report: BackendReport = { provider: "webgpu", why: `WebGPU adapter: ${found.name}` };
  const wasm = onProvider(ort, "wasm");
  const create = async (model: Uint8Array, options?: object): Promise<OrtSessionLike> => {
    if (report.provider === "wasm") return wasm.InferenceSession.create(model, options);
    let gpu: OrtSessionLike;
    try {
      // At level 1 (info) onnxruntime logs each node it assigns to the CPU provider for want of a WebGPU kernel.
      const created = await capturingOrtLog(() => ort.InferenceSession.create(model, { ...options, executionProviders: ["webgpu"], logSeverityLevel: 1 }));
      gpu = created.value;
      const onCpu = new Set([...(report.cpuOps ?? []), ...created.lines.flatMap((line) => /kernel not found in registries for Op type: (\w+)/.exec(line)?.[1] ?? [])]);
      report.cpuOps = [...onCpu].sort();
      changed(report);
    } catch (error) {
      report.provider = "wasm";
      report.why = `a WebGPU session could not be created (${(error as Error).message}); wasm instead`;
      changed(report);
      return wasm.InferenceSession.create(model, options);
    }
    return checkedOnce(quiet(gpu), () => wasm.InferenceSession.create(model, options), report, changed);
  };
  return { ort: { Tensor: ort.Tensor, InferenceSession: { create } }, report };
}

/**
 * Runs `during` with onnxruntime's own log lines (its wasm build writes them with console.error,
 * tagged [I:onnxruntime...] and so on) kept from the console and returned; any other line is
 * written as usual, and so are onnxruntime's errors ([E:], [F:]).
 */
async function capturingOrtLog<T>(during: () => Promise<T>): Promise<{ value: T; lines: string[] }> {
  const lines: string[] = [];
  const write = console.error;
  console.error = (...args: unknown[]) => {
    const line = args.map(String).join(" ");
    if (/\[[VIW]:onnxruntime/.test(line)) lines.push(line);
    else write(...args);
  };
  try {
    return { value: await during(), lines };
  } finally {
    console.error = write;
  }
}

/** A session created at log level 1 whose runs log errors only (their own log level). */
function quiet(session: OrtSessionLike): OrtSessionLike {
  const run = session.run.bind(session) as (feeds: Record<string, OrtTensorLike>, options: object) => Promise<Record<string, OrtTensorLike>>;
  return { run: (feeds) => run(feeds, { logSeverityLevel: 3 }), release: () => session.release() };
}

/** `ort` with every session on `provider`, whatever the caller's options name. */
function onProvider(ort: OrtLike, provider: ProviderName): OrtLike {
  return { Tensor: ort.Tensor, InferenceSession: { create: (model, options) => ort.InferenceSession.create(model, { ...options, executionProviders: [provider] }) } };
}

/**
 * A WebGPU session whose first run is also run on wasm and compared; on a difference beyond
 * WEBGPU_TOLERANCE, or when a WebGPU run fails, the session and later ones are wasm's.
 */
function checkedOnce(gpu: OrtSessionLike, makeWasm: () => Promise<OrtSessionLike>, report: BackendReport, changed: (report: BackendReport) => void): OrtSessionLike {
  let active = gpu;
  let checked = false;
  const switchToWasm = async (why: string) => {
    report.provider = "wasm";
    report.why = why;
    changed(report);
    await gpu.release();
    active = await makeWasm();
    return active;
  };
  return {
    release: () => active.release(),
    run: async (feeds) => {
      if (active !== gpu) return active.run(feeds);
      let onGpu: Record<string, OrtTensorLike>;
      try {
        onGpu = await gpu.run(feeds);
      } catch (error) {
        // A kernel's fault, a device lost: the task is run again on wasm, and so are the later ones.
        return (await switchToWasm(`a WebGPU run failed (${(error as Error).message}); wasm instead`)).run(feeds);
      }
      if (checked) return onGpu;
      checked = true;
      const wasm = await makeWasm();
      const onWasm = await wasm.run(feeds);
      await wasm.release();
      const relativeDifference = largestRelativeDifference(onGpu, onWasm);
      report.check = { relativeDifference, tolerance: WEBGPU_TOLERANCE };
      if (!(relativeDifference <= WEBGPU_TOLERANCE)) {
        await switchToWasm(`WebGPU's results differ from wasm's by ${relativeDifference.toExponential(2)} (more than ${WEBGPU_TOLERANCE}); wasm instead`);
        return onWasm;
      }
      changed(report);
      return onGpu;
    },
  };
}

/** Over every float output: max |a - b| / max |b|; NaN (which no tolerance passes) where only one side has a NaN or an output differs in length. */
function largestRelativeDifference(a: Record<string, OrtTensorLike>, b: Record<string, OrtTensorLike>): number {
  let largest = 0;
  for (const [name, expected] of Object.entries(b)) {
    const got = a[name];
    if (got === undefined) return Number.NaN;
    if (expected.type !== "float32") continue;
    const x = got.data as Float32Array;
    const y = expected.data as Float32Array;
    if (x.length !== y.length) return Number.NaN;
    let scale = 0;
    let difference = 0;
    for (let i = 0; i < y.length; i++) {
      scale = Math.max(scale, Math.abs(y[i]!));
      difference = Math.max(difference, Math.abs(x[i]! - y[i]!));
      if (Number.isNaN(x[i]!) !== Number.isNaN(y[i]!)) return Number.NaN;
    }
    if (difference > 0) largest = Math.max(largest, scale === 0 ? Number.POSITIVE_INFINITY : difference / scale);
  }
  return largest;
}
