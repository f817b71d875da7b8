/**
 * Running ONNX models with onnxruntime-node: loading it (lazily, so that programs on other
 * backends never load the native binding), checking an execution provider starts, and the
 * Executable of a compiled program, which converts tfjs tensors to onnxruntime tensors and
 * back without copying on tfjs's cpu backend (the onnx backend's home for tensors).
 */
import * as tf from "@tensorflow/tfjs";
import type { Tensor as TfTensor } from "@tensorflow/tfjs-core";
import type { InferenceSession, Tensor as OrtTensor } from "onnxruntime-node";
import type { DType, ProgramIR } from "../../ir/types.js";
import { ModelScope, OnnxGraph, valueInfo } from "./graph.js";
import { buildModel, modelBytes, type OnnxModel } from "./model.js";

type OnnxRuntime = typeof import("onnxruntime-node");

let runtime: Promise<OnnxRuntime> | undefined;

/**
 * onnxruntime-node's module; rejects with the loader's error when it cannot load. Its own log
 * is for fatal errors only: every failure also comes back as an exception, which FedTensor
 * reports (an execution provider that cannot start would otherwise print its search for
 * libraries on stderr as well).
 */
export function onnxRuntime(): Promise<OnnxRuntime> {
  runtime ??= import("onnxruntime-node").then((m) => {
    const ort = (m as { default?: OnnxRuntime }).default ?? m;
    ort.env.logLevel = "fatal";
    return ort;
  });
  return runtime;
}

export interface SessionSettings {
  /** onnxruntime's execution provider: cpu, or cuda where its provider libraries are installed. */
  readonly executionProvider: string;
  /** Threads one session call uses; undefined for onnxruntime's default (one per core). */
  readonly threads?: number;
}

/** Error lines only: onnxruntime's warnings (unused initializers removed, ...) are no news to users. */
const ERRORS_ONLY = 3;

/**
 * Where onnxruntime's profiler writes, when set: every session writes
 * `<prefix>_<date>.json` (Chrome trace format, one event per node run) when it is released;
 * bench/onnx-profile.ts sums it by operator (docs/benchmarks.md).
 */
const PROFILE_VARIABLE = "FEDTENSOR_ONNX_PROFILE";

async function createSession(bytes: Uint8Array, settings: SessionSettings): Promise<InferenceSession> {
  const ort = await onnxRuntime();
  return ort.InferenceSession.create(bytes, {
    executionProviders: [settings.executionProvider],
    graphOptimizationLevel: "all",
    logSeverityLevel: ERRORS_ONLY,
    // Without the CPU arena: each session's arena keeps its peak and, released, does not go back
    // to the OS, so a run that compiles a session per chunk shape (Poisson cohorts in DP) grew
    // to 8.1 GiB in 100 rounds, 1.4 GiB without it (docs/benchmarks.md).
    enableCpuMemArena: false,
    // DivMulFusion rewrites Mul(Div(1, x), y) as Div(y, x) and drops the shape of the 1 when
    // that has more dims than x and y (ones([1, 1, 1]) / x[2, 1] * y came out [2, 1], not
    // [1, 2, 1]; a Transpose or a Scan after it then failed, a Loop read the wrong rows;
    // test/differential/regressions.test.ts). It saves one division.
    extra: { optimization: { disable_specified_optimizers: "DivMulFusion" } },
    ...(process.env[PROFILE_VARIABLE] ? { enableProfiling: true, profileFilePrefix: process.env[PROFILE_VARIABLE] } : {}),
    ...(settings.threads === undefined ? {} : { intraOpNumThreads: settings.threads, interOpNumThreads: 1 }),
  });
}

const probes = new Map<string, Promise<void>>();

/**
 * Resolves when `provider` runs a one-node model; rejects with onnxruntime's reason otherwise
 * (a provider whose libraries are missing fails here rather than falling back to the CPU).
 */
export function probeProvider(provider: string): Promise<void> {
  let probe = probes.get(provider);
  if (probe === undefined) {
    probe = (async () => {
      const ort = await onnxRuntime();
      const scope = new ModelScope();
      const g = new OnnxGraph(scope);
      const y = g.op1("Neg", ["x"]);
      const graph = g.finish("probe", [valueInfo("x", "float32", [1])], [{ name: y, type: "float32", shape: [1] }]);
      const session = await createSession(modelBytes(graph), { executionProvider: provider });
      await session.run({ x: new ort.Tensor("float32", new Float32Array([1]), [1]) });
      await session.release();
    })();
    probes.set(provider, probe);
    probe.catch(() => probes.delete(provider));
  }
  return probe;
}

/** A tfjs tensor as an onnxruntime tensor: on tfjs's cpu backend, over the same memory. */
function toOrt(ort: OnnxRuntime, t: TfTensor): OrtTensor {
  const data = t.dataSync() as Float32Array | Int32Array | Uint8Array;
  return new ort.Tensor(t.dtype as "float32" | "int32" | "bool", data, t.shape);
}

/** An onnxruntime result as a tfjs tensor; its buffer is the result's own, so tfjs's cpu backend keeps it as it is. */
function fromOrt(t: OrtTensor, dtype: DType): TfTensor {
  return tf.tensor(t.data as Float32Array | Int32Array | Uint8Array, [...t.dims], dtype);
}

/** A program compiled to one ONNX model and session. */
export class OnnxExecutable {
  private readonly session: Promise<InferenceSession>;
  private readonly inputs: readonly string[];
  private readonly outputs: readonly string[];
  private readonly outputDTypes: readonly DType[];
  private readonly checks: OnnxModel["checks"];

  constructor(program: ProgramIR, settings: SessionSettings) {
    const model = buildModel(program);
    this.inputs = model.inputs;
    this.outputs = model.outputs;
    this.checks = model.checks;
    this.outputDTypes = program.graph.outputs.map((id) => program.values[id]!.dtype);
    this.session = createSession(model.bytes, settings);
    // A failure is reported by the first run; until then it is not an unhandled rejection.
    this.session.catch(() => undefined);
  }

  async run(inputs: readonly TfTensor[]): Promise<TfTensor[]> {
    const [ort, session] = await Promise.all([onnxRuntime(), this.session]);
    const feeds = Object.fromEntries(this.inputs.map((name, i) => [name, toOrt(ort, inputs[i]!)]));
    const results = await session.run(feeds);
    for (const check of this.checks) {
      const count = Number((results[check.output] as OrtTensor).data[0]);
      if (count !== 0) throw check.fail(count);
    }
    return this.outputs.map((name, i) => fromOrt(results[name] as OrtTensor, this.outputDTypes[i]!));
  }

  dispose(): void {
    void this.session.then((s) => s.release()).catch(() => undefined);
  }
}
