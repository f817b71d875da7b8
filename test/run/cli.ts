/** Runs the built `fedtensor` CLI (bin/ over dist/) as a real child process, as a user would. */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { readMetrics, type MetricsRow } from "../../src/lib/run/metrics.js";
import { deadline } from "../helpers/deadline.js";

const root = join(dirname(fileURLToPath(import.meta.url)), "../..");
export const cli = join(root, "bin/fedtensor.js");

/** A small, fast run: logistic regression on 20 MNIST clients, a checkpoint every round. */
export const smallRun = (out: string, ...extra: string[]): string[] => [
  "run", "--model", "logistic", "--clients", "20", "--clients-per-round", "3", "--batch-size", "100",
  "--checkpoint-every", "1", "--out", out, ...extra,
];

export interface CliResult {
  readonly status: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs the CLI to its end; `timeout` is the deadline on an idle machine, scaled to this one (deadline.ts). */
export function runCli(args: readonly string[], timeout = 60_000): CliResult {
  const { status, stdout, stderr } = spawnSync(process.execPath, [cli, ...args], { encoding: "utf8", timeout: deadline(timeout) });
  return { status, stdout, stderr };
}

/**
 * The built CLI's `main` (dist/, as bin/ runs it, examples/ found as from there) run in this
 * process: its exit status and what it printed: `output` both streams in order, `stdout`
 * (console.log) and `stderr` (console.error) apart. For the many refusals that a child process
 * would only slow down.
 */
export async function inProcessCli(args: readonly string[]): Promise<{ status: number; output: string; stdout: string; stderr: string }> {
  const lines: { text: string; error: boolean }[] = [];
  const capture = (error: boolean) => (...parts: unknown[]) => void lines.push({ text: `${parts.map(String).join(" ")}\n`, error });
  const [log, error] = [console.log, console.error];
  [console.log, console.error] = [capture(false), capture(true)];
  try {
    const { main } = (await import(pathToFileURL(join(root, "dist/src/cli/main.js")).href)) as typeof import("../../src/cli/main.js");
    const status = await main(args);
    const text = (which: (line: { error: boolean }) => boolean) => lines.filter(which).map((line) => line.text).join("");
    return { status, output: text(() => true), stdout: text((line) => !line.error), stderr: text((line) => line.error) };
  } finally {
    [console.log, console.error] = [log, error];
  }
}

export function startCli(args: readonly string[]): ChildProcess {
  return spawn(process.execPath, [cli, ...args], { stdio: ["ignore", "pipe", "pipe"] });
}

/** A `fedtensor worker` on a Redis server, once it says it waits for chunks (an event, not a sleep). */
export async function startWorker(redisUrl: string): Promise<ChildProcess> {
  const worker = startCli(["worker", "--redis", redisUrl]);
  await new Promise<void>((resolve, reject) => {
    let output = "";
    worker.stdout!.on("data", (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes("waiting for chunks")) resolve();
    });
    worker.once("exit", (code) => reject(new Error(`the worker exited with ${code}: ${output}`)));
  });
  return worker;
}

export const metricsRows = (out: string): MetricsRow[] =>
  existsSync(join(out, "metrics.jsonl")) ? readMetrics(join(out, "metrics.jsonl")) : [];

/** A stack trace line, which an expected failure must never print. */
export const stackLine = /^\s+at .+\(.+:\d+:\d+\)$|^\s+at .+:\d+:\d+$/m;
