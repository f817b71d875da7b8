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
  /** torch.get_num_threads() in the child. */
  readonly threads: number;
  /** The new parameters and loss of its last round, by name. */
  readonly result: Record<string, Float32Array>;
}

const script = fileURLToPath(new URL("../../bench/fedavg_round_torch.py", import.meta.url));

/** The first python3 that imports torch, or undefined. */
export function pythonWithTorch(): string | undefined {
  return ["python3", "/usr/bin/python3"].find((python) => spawnSync(python, ["-c", "import torch"], { stdio: "ignore" }).status === 0);
}

/** Which round PyTorch runs: the model, its parameter names in order, the form of the round (see the script), its threads. */
export interface TorchRound {
  readonly model: "2nn" | "cnn";
  readonly keys: readonly string[];
  readonly form: "sequential" | "vmap";
  /** torch.set_num_threads; OpenBLAS's own threads follow it. */
  readonly threads: number;
}

/**
 * The 2NN's round as bench/fedavg-round.ts runs it: sequential, and OpenBLAS on one thread:
 * for these small products its threads cost more than they save (0.25 s against 0.47 s per round here).
 */
export const MLP2NN_ROUND: TorchRound = { model: "2nn", keys: ["w1", "b1", "w2", "b2", "w3", "b3"], form: "sequential", threads: 1 };

/** Runs `rounds` PyTorch rounds on `arrays` (the parameters by `round.keys`, x, y int32, count) after a warm-up. */
export function runTorch(
  python: string,
  arrays: Record<string, { data: Float32Array | Int32Array; shape: readonly number[] }>,
  lr: number,
  rounds: number,
  round: TorchRound,
): TorchTimes {
  const folder = mkdtempSync(join(tmpdir(), "fedtensor-torch-"));
  try {
    const meta: Record<string, unknown> = { lr, model: round.model, keys: round.keys, form: round.form, threads: round.threads };
    for (const [name, { data, shape }] of Object.entries(arrays)) {
      writeFileSync(join(folder, `${name}.bin`), new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
      meta[name] = shape;
    }
    writeFileSync(join(folder, "meta.json"), JSON.stringify(meta));
    const threads = String(round.threads);
    const env = { ...process.env, OPENBLAS_NUM_THREADS: threads, OMP_NUM_THREADS: threads };
    const run = spawnSync(python, [script, folder, String(rounds)], { encoding: "utf8", env, maxBuffer: 1 << 24 });
    if (run.status !== 0) throw new Error(`the PyTorch script failed: ${run.stderr}`);
    const { seconds, version, threads: used } = JSON.parse(run.stdout.trim().split("\n").pop()!) as { seconds: number[]; version: string; threads: number };
    const result: Record<string, Float32Array> = {};
    for (const name of [...round.keys, "loss"]) {
      const bytes = readFileSync(join(folder, `out-${name}.bin`));
      result[name] = new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength));
    }
    return { seconds, version, threads: used, result };
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }
}
