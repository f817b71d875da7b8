/**
 * The webgpu backend where no adapter is needed: its selection, what it says when Dawn cannot
 * load or finds no adapter (each in a child process of the built library, so that this
 * process's Dawn and tfjs state stay untouched), and the lowering's choices for it. Where an
 * adapter exists (test/helpers/test-backends.ts), also that a kernel the GPU rejects is an
 * error rather than garbage; the differential tests check its results.
 */
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import * as tf from "@tensorflow/tfjs";
import { describe, expect, test } from "vitest";
import { fedAvgProgram } from "../../src/lib/algorithms/fedavg.js";
import { logistic } from "../../src/lib/models/dense.js";
import { Rng } from "../../src/lib/random.js";
import { loadRunConfig } from "../../src/lib/run/config.js";
import { atClients, f32, map, mean, program, sum, transpose } from "../../src/index.js";
import { interpret } from "../../src/interpret/reference.js";
import { toHost, type HostLeaf } from "../differential/compare.js";
import { runsBatched } from "../../src/lower/tfjs-forms.js";
import { backendNames, requestedBackend, useBackend } from "../../src/runtime/backend.js";
import { tfjsLowering } from "../../src/runtime/lowering.js";
import { dawnOptions, isSoftwareAdapter, withDeviceErrors } from "../../src/runtime/webgpu.js";
import { webgpu } from "../helpers/test-backends.js";
import { deadline } from "../helpers/deadline.js";

const root = fileURLToPath(new URL("../../", import.meta.url));

/** Starts the webgpu backend in a child process with `env` and a module hook, and returns the error message it prints. */
function startInChild(env: Record<string, string>, hideDawn = false): string {
  return startChild(env, hideDawn).message;
}

/** The child's error message, and everything else it wrote to stderr (where Dawn's native warnings go). */
function startChild(env: Record<string, string>, hideDawn = false): { message: string; stderr: string } {
  const hook = "export async function resolve(s, c, next) { if (s === 'webgpu') throw new Error(\"Cannot find package 'webgpu'\"); return next(s, c); }";
  const script = `
    ${hideDawn ? `(await import("node:module")).register("data:text/javascript,${encodeURIComponent(hook)}");` : ""}
    const { useBackend } = await import("./dist/src/index.js");
    try { await useBackend("webgpu"); console.log("started"); } catch (error) { console.log(error.message); }`;
  const child = spawnSync(process.execPath, ["--input-type=module", "-e", script], { cwd: root, encoding: "utf8", env: { ...process.env, ...env }, timeout: deadline(60_000) });
  return { message: child.stdout.trim().split("\n").pop() ?? child.stderr, stderr: child.stderr };
}

describe("webgpu: selection and errors", () => {
  test("is a backend by option, environment and run config", async () => {
    expect(backendNames).toContain("webgpu");
    expect(requestedBackend("webgpu")).toBe("webgpu");
    process.env.FEDTENSOR_BACKEND = "webgpu";
    try {
      expect(requestedBackend(undefined)).toBe("webgpu");
    } finally {
      delete process.env.FEDTENSOR_BACKEND;
    }
    expect((await loadRunConfig(["--backend", "webgpu"])).backend).toBe("webgpu");
  });

  test("Dawn's options come space-separated from FEDTENSOR_WEBGPU_DAWN", () => {
    expect(dawnOptions("")).toEqual([]);
    expect(dawnOptions("  backend=opengl   adapter=llvmpipe ")).toEqual(["backend=opengl", "adapter=llvmpipe"]);
  });

  test("software adapters are told apart from GPUs", () => {
    expect(isSoftwareAdapter({ vendor: "", device: "llvmpipe-llvm-15-0-6-256-bits-", description: "OpenGL ES 3.2 Mesa 22.3.6" })).toBe(true);
    expect(isSoftwareAdapter({ vendor: "google", device: "SwiftShader Device (Subzero)", description: "" })).toBe(true);
    expect(isSoftwareAdapter({ vendor: "nvidia", device: "NVIDIA H200", description: "NVIDIA: 580.159.03", isFallbackAdapter: false })).toBe(false);
    expect(isSoftwareAdapter({ vendor: "x", device: "y", description: "z", isFallbackAdapter: true })).toBe(true);
  });

  test("without the webgpu package it is FT301 saying how to install it", () => {
    expect(startInChild({}, true)).toBe(
      "FT301: backend webgpu is not available: the webgpu package (Dawn for Node, an optional dependency) does not load (Cannot find package 'webgpu'); install it with npm i webgpu@0.6.2",
    );
  });

  test("without a Vulkan driver it is FT301 naming what is missing, never a silent fallback", () => {
    // No ICD for the Vulkan loader, and no Dawn options: Dawn finds no adapter on any machine.
    const { message, stderr } = startChild({ VK_ICD_FILENAMES: "/nonexistent.json", VK_DRIVER_FILES: "/nonexistent.json", FEDTENSOR_WEBGPU_DAWN: "" });
    expect(message).toMatch(/^FT301: backend webgpu is not available: Dawn finds no GPU adapter( \(Dawn says: [^)]+\))?: on Linux it needs a Vulkan driver .*libvulkan1/);
    // Dawn's native warnings (without libvulkan: "Couldn't load Vulkan" and an `at operator() (BackendVk.cpp:368)` line) are in the message, not on the terminal.
    expect(stderr).toBe("");
    expect(message).not.toMatch(/at operator\(\)/);
    if (spawnSync("sh", ["-c", "ldconfig -p | grep -q libvulkan.so.1"]).status !== 0) expect(message).toContain("Dawn says: Warning: Couldn't load Vulkan: libvulkan.so.1");
    expect(message).toMatch(/FEDTENSOR_WEBGPU_DAWN=backend=opengl and EGL_PLATFORM=surfaceless/);
  });

  test("Dawn options it refuses are FT305", () => {
    expect(startInChild({ FEDTENSOR_WEBGPU_DAWN: "backend=bogus" })).toMatch(/^FT305: FEDTENSOR_WEBGPU_DAWN: Dawn refuses 'backend=bogus': unrecognised backend 'bogus'/);
  });
});

describe("webgpu: lowering decisions", () => {
  test("every map runs batched, one kernel for all clients, as on native TensorFlow and unlike wasm and cpu", () => {
    // A map body multiplying per-client data by per-client weights: wasm and cpu loop over clients.
    const body = { nodes: [{ op: "matmul", inputs: [0, 1], outputs: [2], attrs: {} }], inputs: [0, 1], outputs: [2] } as never;
    const perClient = () => true;
    expect(tfjsLowering("webgpu").policy.acceptBatchedMap(body, perClient, [])).toBe(true);
    expect(tfjsLowering("wasm").policy.acceptBatchedMap(body, perClient, [])).toBe(false);
    expect(runsBatched("webgpu")).toBe(true);
    expect(runsBatched("cpu")).toBe(false);
  });
});

describe.skipIf(!webgpu.available)(`webgpu on an adapter (${webgpu.detail})`, () => {
  test("a kernel the GPU rejects is an error, not garbage", async () => {
    await tf.setBackend("webgpu");
    // tfjs webgpu 4.22's general Transpose shader does not compile for int32 (tfjs-forms.ts).
    // Large enough that tfjs runs it on the GPU rather than forwarding it to its CPU kernels.
    const x = tf.add(tf.zeros([20, 30, 40], "int32"), tf.scalar(1, "int32"));
    await expect(withDeviceErrors(async () => [tf.transpose(x, [2, 0, 1])], (made) => tf.dispose(made))).rejects.toThrow(/^webgpu: a kernel failed: .*TransposeProgram/);
    x.dispose();
  });

  test("a FedAvg round of the library, its inputs made on the GPU, agrees with onnx", async () => {
    const rng = Rng.fromSeed(7);
    const init = logistic.init(rng);
    const [clients, steps, batch] = [2, 3, 4];
    const pixels = new Float32Array(clients * steps * batch * 784).map(() => rng.float());
    const labels = new Int32Array(clients * steps * batch).map(() => rng.int(0, 10));
    const round = fedAvgProgram(logistic);
    const on = async (backend: "webgpu" | "onnx") => {
      await useBackend(backend);
      // tf.fill runs on the GPU on webgpu: the library's input checks must read it asynchronously.
      const inputs = {
        params: Object.fromEntries(Object.entries(init).map(([k, v]) => [k, tf.tensor(v.data, v.shape)])),
        x: tf.tensor(pixels, [clients, steps, batch, 784]),
        y: tf.tensor(labels, [clients, steps, batch], "int32"),
        mask: tf.ones([clients, steps, batch]),
        count: tf.fill([clients], steps * batch),
        lr: 0.1,
      };
      const out = (await round.run(inputs as never, { backend })) as unknown as { params: Record<string, tf.Tensor>; loss: tf.Tensor };
      const host = Object.fromEntries(await Promise.all(Object.entries(out.params).map(async ([k, t]) => [k, Array.from(await t.data())] as const)));
      const loss = (await out.loss.data())[0]!;
      tf.dispose([out as never, inputs as never]);
      return { host, loss };
    };
    const gpu = await on("webgpu");
    const cpu = await on("onnx");
    expect(gpu.loss).toBeCloseTo(cpu.loss, 4);
    for (const [k, values] of Object.entries(cpu.host)) {
      const worst = Math.max(...values.map((v, i) => Math.abs(v - gpu.host[k]![i]!)));
      expect(worst, k).toBeLessThan(1e-4);
    }
  }, deadline(120_000));

  // Found on the H200 by 600 random programs (test/differential/forward.test.ts): tfjs webgpu's
  // reduce shaders take at most 6 dims ("GPU for rank 7 is not yet supported"), and batching
  // the clients makes a rank-6 member rank 7; so does its Transpose shader. Dims that move
  // together merge first.
  test("reductions and transposes of rank-7 operands (a batched rank-6 member) agree with the interpreter", async () => {
    const p = program({ x: atClients(f32([2, 1, 3, 1, 2, 2])) }, ({ x }) => [
      map((m) => mean(m), x),
      map((m) => sum(m, [0, 2], true), x),
      map((m) => transpose(m, [5, 4, 3, 0, 1, 2]), x),
    ]);
    const inputs = { x: { shape: [2, 2, 1, 3, 1, 2, 2], data: Array.from({ length: 48 }, (_, i) => (i % 7) - 3 + i / 16) } };
    await useBackend("webgpu");
    const out = await p.run(inputs as never, { backend: "webgpu", clients: 2 });
    const [got, expected] = [(await toHost(out)) as HostLeaf[], interpret(p.ir, inputs, { clients: 2 }) as HostLeaf[]];
    expect(got.map((leaf) => [...leaf.shape])).toEqual([[2], [2, 1, 1, 1, 1, 2, 2], [2, 2, 2, 1, 2, 1, 3]]);
    for (const [i, leaf] of expected.entries()) {
      expect([...got[i]!.shape], `output ${i}`).toEqual([...leaf.shape]);
      Array.from(leaf.data).forEach((v, j) => expect(got[i]!.data[j], `output ${i} entry ${j}`).toBeCloseTo(v as number, 5));
    }
    tf.dispose(out as never);
  }, deadline(60_000));
});
