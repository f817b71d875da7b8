import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import * as tf from "@tensorflow/tfjs";
import { afterEach, describe, expect, test } from "vitest";
import { atClients, atServer, broadcast, f32, FedTensorError, map, matmul, program, reduceMean, relu, sum } from "../../src/index.js";
import { runFailure } from "../../src/runtime/backend.js";

/** Whether onnxruntime-node's CUDA provider can start here: its library installed next to the binding, and an NVIDIA driver. */
const cudaProviderUsable =
  existsSync(join(dirname(createRequire(import.meta.url).resolve("onnxruntime-node")), `../bin/napi-v6/${process.platform}/${process.arch}/libonnxruntime_providers_cuda.so`)) &&
  spawnSync("nvidia-smi", ["-L"]).status === 0;

const p = program({ w: atServer(f32([3, 2])), x: atClients(f32(["B", 3])) }, ({ w, x }) =>
  reduceMean(map((wm, xm) => sum(relu(matmul(xm, wm))), broadcast(w), x)),
);
const inputs = { w: [[1, -1], [0.5, 2], [-1, 1]], x: [[[1, 2, 3], [0, 1, 0]], [[2, 2, 2], [-1, 0, 1]]] };

async function failure(run: () => Promise<unknown>): Promise<FedTensorError> {
  try {
    await run();
  } catch (error) {
    expect(error).toBeInstanceOf(FedTensorError);
    return error as FedTensorError;
  }
  throw new Error("expected an FT error");
}

describe("backends", () => {
  afterEach(() => {
    delete process.env.FEDTENSOR_BACKEND;
  });

  test("wasm and cpu compute the same result", async () => {
    const onWasm = await p.run(inputs, { backend: "wasm" });
    expect(tf.getBackend()).toBe("wasm");
    const onCpu = await p.run(inputs, { backend: "cpu" });
    expect(tf.getBackend()).toBe("cpu");
    expect(await onCpu.data()).toEqual(await onWasm.data());
    // client 1: relu([-1,6]) + relu([0.5,2]) = 8.5; client 2: relu([1,4]) + relu([-2,2]) = 7
    expect((await onWasm.data())[0]).toBeCloseTo(7.75, 5);
    tf.dispose([onWasm, onCpu]);
  });

  test("FEDTENSOR_BACKEND chooses the backend when no option is given", async () => {
    process.env.FEDTENSOR_BACKEND = "cpu";
    (await p.run(inputs)).dispose();
    expect(tf.getBackend()).toBe("cpu");
  });

  test("tensorflow without @tensorflow/tfjs-node is FT301, never a silent fallback", async () => {
    const error = await failure(() => p.run(inputs, { backend: "tensorflow" }));
    expect(error.code).toBe("FT301");
    expect(error.message).toMatch(/^FT301: backend tensorflow is not available: it needs @tensorflow\/tfjs-node-gpu \(CUDA\) or @tensorflow\/tfjs-node/);
    expect(error.fix).toMatch(/npm i @tensorflow\/tfjs-node/);
  });

  test("an unknown backend is FT305, from the option or from the environment", async () => {
    expect((await failure(() => p.run(inputs, { backend: "tpu" }))).message).toBe(
      "FT305: backend option: unknown backend 'tpu'; choose one of wasm, cpu, webgpu, tensorflow, onnx",
    );
    process.env.FEDTENSOR_BACKEND = "gpu";
    expect((await failure(() => p.run(inputs))).message).toBe("FT305: FEDTENSOR_BACKEND: unknown backend 'gpu'; choose one of wasm, cpu, webgpu, tensorflow, onnx");
  });
});

describe("the onnx backend", () => {
  afterEach(() => {
    delete process.env.FEDTENSOR_BACKEND;
    delete process.env.FEDTENSOR_EXECUTION_PROVIDER;
  });

  test("is the default, and computes what wasm does, with its tensors on tfjs's cpu backend, which onnxruntime reads in place", async () => {
    const onOnnx = await p.run(inputs);
    expect(tf.getBackend()).toBe("cpu");
    expect((await onOnnx.data())[0]).toBeCloseTo(7.75, 5);
    const onWasm = await p.run(inputs, { backend: "wasm" });
    expect(await onOnnx.data()).toEqual(await onWasm.data());
    tf.dispose([onOnnx, onWasm]);
  });

  test("FEDTENSOR_BACKEND chooses it, and a run leaves only its outputs", async () => {
    process.env.FEDTENSOR_BACKEND = "onnx";
    (await p.run(inputs, { backend: "wasm" })).dispose();
    (await p.run(inputs)).dispose();
    expect(tf.getBackend()).toBe("cpu");
    const before = tf.memory().numTensors;
    const out = await p.run(inputs);
    expect(tf.memory().numTensors).toBe(before + 1);
    out.dispose();
  });

  // Where the CUDA provider is not installed (CI, most machines), asking for cuda must fail, not run on the CPU.
  test.runIf(!cudaProviderUsable)("an execution provider that cannot start is FT301, never a silent fallback to the CPU", async () => {
    const error = await failure(() => p.run(inputs, { backend: "onnx", executionProvider: "cuda" }));
    expect(error.code).toBe("FT301");
    expect(error.message).toMatch(/^FT301: backend onnx is not available: execution provider cuda does not start \(.+\); install its libraries with ONNXRUNTIME_NODE_INSTALL=cuda12 node node_modules\/onnxruntime-node\/script\/install/);
    process.env.FEDTENSOR_EXECUTION_PROVIDER = "cuda";
    expect((await failure(() => p.run(inputs, { backend: "onnx" }))).code).toBe("FT301");
  });

  // Where it is (its library next to the binding, and an NVIDIA driver), it runs, and agrees with the CPU's.
  test.runIf(cudaProviderUsable)("the CUDA execution provider, where installed, runs the program and agrees with the CPU", async () => {
    const [onCuda, onCpu] = [await p.run(inputs, { backend: "onnx", executionProvider: "cuda" }), await p.run(inputs, { backend: "onnx", executionProvider: "cpu" })];
    const [a, b] = [Array.from(await onCuda.data()), Array.from(await onCpu.data())];
    tf.dispose([onCuda, onCpu]);
    a.forEach((value, i) => expect(value).toBeCloseTo(b[i]!, 4));
  });

  test("an unknown execution provider, or one for another backend, is FT305", async () => {
    expect((await failure(() => p.run(inputs, { backend: "onnx", executionProvider: "tpu" }))).message).toMatch(
      /^FT305: executionProvider: unknown execution provider 'tpu'; onnxruntime-node here has cpu, /,
    );
    expect((await failure(() => p.run(inputs, { backend: "wasm", executionProvider: "cpu" }))).message).toBe(
      "FT305: executionProvider: only the onnx backend takes one, and this run is on wasm",
    );
  });
});

describe("inputs checked against the program's declaration", () => {
  test("a named dim that disagrees between inputs is FT210", async () => {
    const q = program({ a: atClients(f32(["B"])), b: atClients(f32(["B"])) }, ({ a, b }) => reduceMean(map((x, y) => sum(x), a, b)));
    const error = await failure(() => q.run({ a: [[1, 2]], b: [[1, 2, 3]] }));
    expect(error.message).toBe("FT210: input b: dim B is 3 here but 2 elsewhere");
  });

  test("clients that disagree between CLIENTS inputs are FT210", async () => {
    const q = program({ a: atClients(f32([])), b: atClients(f32([])) }, ({ a, b }) => reduceMean(map((x, y) => sum(x), a, b)));
    expect((await failure(() => q.run({ a: [1, 2], b: [1, 2, 3] }))).message).toBe("FT210: input b: dim clients is 3 here but 2 elsewhere");
  });

  test("an input the program does not declare is FT302, not ignored", async () => {
    expect((await failure(() => p.run({ ...inputs, extra: 1 } as never))).message).toBe("FT302: program input: unknown key extra");
  });

  test("a literal dim that differs from the data, a wrong rank, a missing input and bad data are clear errors", async () => {
    expect((await failure(() => p.run({ w: [[1, 2, 3], [4, 5, 6]], x: inputs.x }))).message).toBe("FT210: input w: dim 0 is 2 here but 3 elsewhere");
    expect((await failure(() => p.run({ w: inputs.w, x: [[1, 2, 3]] }))).message).toBe(
      "FT302: input x: rank 2 (shape [1,3]) where {f32[B,3]}@CLIENTS needs rank 3 (clients first)",
    );
    expect((await failure(() => p.run({ w: inputs.w } as never))).message).toBe("FT302: program input: missing key x");
    expect((await failure(() => p.run({ w: { shape: [3, 2], data: [1, 2, 3] }, x: inputs.x }))).message).toBe(
      "FT302: input w: data has 3 values but shape [3,2] needs 6",
    );
  });
});

describe("a backend out of memory", () => {
  // A wasm module whose one function loads past its one 64 KiB page: the trap tfjs wasm's
  // kernels hit in a 1,000-client round of the 2NN (bench/fedavg-scaling.ts).
  const outOfBoundsLoad = new Uint8Array([
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, 0x01, 0x05, 0x01, 0x60, 0x00, 0x01, 0x7f, 0x03, 0x02, 0x01, 0x00, 0x05, 0x03, 0x01, 0x00, 0x01,
    0x07, 0x05, 0x01, 0x01, 0x66, 0x00, 0x00, 0x0a, 0x0b, 0x01, 0x09, 0x00, 0x41, 0x80, 0x80, 0x08, 0x28, 0x02, 0x00, 0x0b,
  ]);
  // Node's typings leave out the WebAssembly global (it is in TypeScript's DOM library).
  const { Module, Instance } = (globalThis as unknown as { WebAssembly: { Module: new (bytes: Uint8Array) => object; Instance: new (module: object) => { exports: object } } })
    .WebAssembly;
  const caught = (f: () => unknown): Error => {
    try {
      f();
    } catch (error) {
      return error as Error;
    }
    throw new Error("expected a throw");
  };

  test("a wasm trap is FT306, with the trap as its cause", () => {
    const { f } = new Instance(new Module(outOfBoundsLoad)).exports as { f: () => number };
    const trap = caught(f);
    const error = runFailure("wasm", trap) as FedTensorError;
    expect(error.code).toBe("FT306");
    expect(error.message).toBe("FT306: backend wasm ran out of memory running the program: RuntimeError: memory access out of bounds");
    expect(error.cause).toBe(trap);
    expect(error.fix).toMatch(/onnx backend/);
  });

  test("an ArrayBuffer V8 cannot allocate is FT306 too; other errors pass through as they are", () => {
    // V8's error for an ArrayBuffer the machine cannot back (new ArrayBuffer(2 ** 40) here; a
    // machine that overcommits memory might hand that one out, so the test makes the error).
    const allocation = new RangeError("Array buffer allocation failed");
    expect((runFailure("onnx", allocation) as FedTensorError).message).toBe("FT306: backend onnx ran out of memory running the program: RangeError: Array buffer allocation failed");
    // What tfjs wasm throws when its heap cannot grow (three 2 GB tensors; too big to make here).
    const abort = new Error("Aborted(). Build with -sASSERTIONS for more info.");
    expect((runFailure("wasm", abort) as FedTensorError).code).toBe("FT306");
    const other = new Error("something else");
    expect(runFailure("wasm", other)).toBe(other);
  });
});
