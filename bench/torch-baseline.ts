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
  /** The script's whole JSON line (bench/lstm_round_torch.py adds the time of each form). */
  readonly report: Readonly<Record<string, unknown>>;
}

/** A PyTorch round script under bench/: the arrays it writes back and the threads it runs on. */
export interface TorchScript {
  readonly file: string;
  /** Names of its out-NAME.bin arrays. */
  readonly outputs: readonly string[];
  /** torch's and OpenBLAS's threads (meta.json's `threads`). */
  readonly threads: number;
  /** More environment for the child, e.g. OpenMP's wait policy. */
  readonly env?: Readonly<Record<string, string>>;
  /** More entries for meta.json, e.g. fedavg_round_torch.py's model and form (bench/cnn-round.ts). */
  readonly meta?: Readonly<Record<string, unknown>>;
}

/**
 * The 2NN's round. OpenBLAS runs on one thread: for these small products its threads cost
 * more than they save (0.25 s against 0.47 s per round here).
 */
export const fedavgTorch: TorchScript = { file: "fedavg_round_torch.py", outputs: ["w1", "b1", "w2", "b2", "w3", "b3", "loss"], threads: 1 };

/** The first python3 that imports torch, or undefined. */
export function pythonWithTorch(): string | undefined {
  return ["python3", "/usr/bin/python3"].find((python) => spawnSync(python, ["-c", "import torch"], { stdio: "ignore" }).status === 0);
}

/**
 * The BLAS library PyTorch's products run on, as loaded (Debian's python3-torch takes whatever
 * libblas.so.3 the alternatives system points to). Debian's reference BLAS makes PyTorch's
 * products several times slower than OpenBLAS (a 2NN round 1.03 s against 0.16 s here), so a
 * comparison against it flatters FedTensor: the benches say which one ran.
 */
function blasOf(python: string): string {
  const probe = "import torch\ntorch.ones(64, 64) @ torch.ones(64, 64)\nprint(sorted({l.split()[-1] for l in open('/proc/self/maps') if 'blas' in l}))";
  const run = spawnSync(python, ["-c", probe], { encoding: "utf8" });
  const libraries = run.status === 0 ? (JSON.parse(run.stdout.trim().replace(/'/g, '"')) as string[]) : [];
  // OpenBLAS's pthread build runs threads of its own beside PyTorch's OpenMP ones: the CNN round 7.2 s against 5.3 s on the OpenMP build.
  if (libraries.some((path) => path.includes("openblas-openmp"))) return "OpenBLAS (OpenMP build)";
  if (libraries.some((path) => path.includes("openblas"))) return "OpenBLAS, not its OpenMP build: PyTorch's threads compete with its own (docs/benchmarks.md: apt-get install libopenblas0-openmp)";
  if (libraries.length > 0) return `${libraries.join(", ")}: not OpenBLAS, PyTorch's products are slow (apt-get install libopenblas0-openmp)`;
  return "no BLAS library loaded (oneDNN/MKL inside torch)";
}

/** Runs `rounds` PyTorch rounds of `script` on `arrays` (the params, x, y int32, count) after a warm-up. */
export function runTorch(
  python: string,
  arrays: Record<string, { data: Float32Array | Int32Array; shape: readonly number[] }>,
  lr: number,
  rounds: number,
  script: TorchScript = fedavgTorch,
): TorchTimes {
  const folder = mkdtempSync(join(tmpdir(), "fedtensor-torch-"));
  try {
    const meta: Record<string, unknown> = { lr, threads: script.threads, ...script.meta };
    for (const [name, { data, shape }] of Object.entries(arrays)) {
      writeFileSync(join(folder, `${name}.bin`), new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
      meta[name] = shape;
    }
    writeFileSync(join(folder, "meta.json"), JSON.stringify(meta));
    const path = fileURLToPath(new URL(`../../bench/${script.file}`, import.meta.url));
    const env = { ...process.env, OPENBLAS_NUM_THREADS: String(script.threads), ...script.env };
    const run = spawnSync(python, [path, folder, String(rounds)], { encoding: "utf8", env });
    if (run.status !== 0) throw new Error(`the PyTorch script failed: ${run.stderr}`);
    const report = JSON.parse(run.stdout.trim().split("\n").pop()!) as { seconds: number[]; version: string };
    const result: Record<string, Float32Array> = {};
    for (const name of script.outputs) {
      const bytes = readFileSync(join(folder, `out-${name}.bin`));
      result[name] = new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength));
    }
    return { seconds: report.seconds, version: `${report.version}, BLAS: ${blasOf(python)}`, result, report };
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }
}
