/**
 * Running bench/fedavg_round_torch.py (PyTorch's FedAvg round) on the bench's own parameters
 * and data, when a python3 with torch is installed: Debian's python3-torch puts it in
 * /usr/bin/python3, which need not be the python3 first on PATH.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

export interface TorchTimes {
  readonly seconds: number[];
  readonly version: string;
  /** The new parameters and loss of its last round, by name. */
  readonly result: Record<string, Float32Array>;
}

const script = fileURLToPath(new URL("../../bench/fedavg_round_torch.py", import.meta.url));

/** The first python3 that imports torch, or undefined. */
export function pythonWithTorch(): string | undefined {
  return ["python3", "/usr/bin/python3"].find((python) => spawnSync(python, ["-c", "import torch"], { stdio: "ignore" }).status === 0);
}

/**
 * Runs `rounds` PyTorch rounds on `arrays` (params w1..b3, x, y int32, count) after a warm-up.
 * OpenBLAS runs on one thread: for these small products its threads cost more than they save
 * (0.25 s against 0.47 s per round here).
 */
export function runTorch(python: string, arrays: Record<string, { data: Float32Array | Int32Array; shape: readonly number[] }>, lr: number, rounds: number): TorchTimes {
  const folder = mkdtempSync(join(tmpdir(), "fedtensor-torch-"));
  try {
    const meta: Record<string, unknown> = { lr };
    for (const [name, { data, shape }] of Object.entries(arrays)) {
      writeFileSync(join(folder, `${name}.bin`), new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
      meta[name] = shape;
    }
    writeFileSync(join(folder, "meta.json"), JSON.stringify(meta));
    const run = spawnSync(python, [script, folder, String(rounds)], { encoding: "utf8", env: { ...process.env, OPENBLAS_NUM_THREADS: "1" } });
    if (run.status !== 0) throw new Error(`the PyTorch script failed: ${run.stderr}`);
    const { seconds, version } = JSON.parse(run.stdout.trim().split("\n").pop()!) as { seconds: number[]; version: string };
    const result: Record<string, Float32Array> = {};
    for (const name of ["w1", "b1", "w2", "b2", "w3", "b3", "loss"]) {
      const bytes = readFileSync(join(folder, `out-${name}.bin`));
      result[name] = new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength));
    }
    return { seconds, version, result };
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }
}
