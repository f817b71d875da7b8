/**
 * bench/fedavg-engine: FedAvg rounds of the 2NN on MNIST (100 clients of 600 examples, all of
 * them each round, in chunks of 10; E=1, B=20, onnx) run in process, then through the BullMQ
 * engine (`fedtensor run --engine`) with 1 and with 2 `fedtensor worker` processes, against a
 * redis-server this bench starts on a free local port. Every mode is the real CLI in child
 * processes. Seconds per round are the mean of the rounds between the first (data loading and
 * compilation on each worker) and the last (which evaluates); the ratio is against the
 * in-process run. Bytes are what passes through Redis as JSON text, per round: to Redis (the
 * program once, the shared inputs, the jobs) and back (the partial accumulators).
 *
 * usage: node dist/bench/fedavg-engine.js [--rounds 6] [--clients 100] [--chunk 10]
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { spawn, type ChildProcess } from "node:child_process";
import { parseArgs } from "node:util";
import { readMetrics } from "../src/lib/run/metrics.js";
import { redisBinary, startRedis } from "./redis-server.js";

const { values } = parseArgs({ options: { rounds: { type: "string", default: "6" }, clients: { type: "string", default: "100" }, chunk: { type: "string", default: "10" } } });
const cli = join(dirname(fileURLToPath(import.meta.url)), "../../bin/fedtensor.js");

function spawnCli(args: string[]): { child: ChildProcess; output: () => string; exited: Promise<number | null> } {
  const child = spawn(process.execPath, [cli, ...args], { stdio: ["ignore", "pipe", "pipe"] });
  let text = "";
  child.stdout!.on("data", (c: Buffer) => (text += c.toString()));
  child.stderr!.on("data", (c: Buffer) => (text += c.toString()));
  return { child, output: () => text, exited: new Promise((resolve) => child.once("exit", resolve)) };
}

async function startWorker(url: string): Promise<ChildProcess> {
  const worker = spawnCli(["worker", "--redis", url]);
  for (let waited = 0; !worker.output().includes("waiting for chunks"); waited += 100) {
    if (waited > 30_000) throw new Error(`worker did not start: ${worker.output()}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return worker.child;
}

interface Measured {
  readonly secondsPerRound: number;
  readonly sentPerRound?: number;
  readonly receivedPerRound?: number;
}

async function measure(engine: string | undefined): Promise<Measured> {
  const out = mkdtempSync(join(tmpdir(), "bench-engine-"));
  try {
    const rounds = Number(values.rounds);
    const run = spawnCli([
      "run", "--model", "2nn", "--clients", values.clients!, "--clients-per-round", values.clients!, "--chunk-clients", values.chunk!,
      "--batch-size", "20", "--rounds", String(rounds), "--eval-every", "1000", "--checkpoint-every", "0", "--out", out,
      ...(engine === undefined ? [] : ["--engine", engine]),
    ]);
    if ((await run.exited) !== 0) throw new Error(`run failed:\n${run.output()}`);
    const timed = readMetrics(join(out, "metrics.jsonl")).slice(1, rounds - 1).map((row) => row.seconds as number);
    const secondsPerRound = timed.reduce((a, b) => a + b, 0) / timed.length;
    const traffic = /: (\d+) rounds through workers; ([\d.]+) MB to Redis, ([\d.]+) MB of partial/.exec(run.output());
    if (traffic === null) return { secondsPerRound };
    return { secondsPerRound, sentPerRound: Number(traffic[2]) / rounds, receivedPerRound: Number(traffic[3]) / rounds };
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  if (redisBinary === undefined) {
    console.log("fedavg-engine: redis-server is not installed (apt-get install redis-server); nothing measured");
    return;
  }
  console.log(`FedAvg 2NN, ${values.clients} clients x 600 MNIST examples a round, chunks of ${values.chunk}, onnx; mean s/round of rounds 2..${Number(values.rounds) - 1}`);
  const baseline = await measure(undefined);
  const row = (mode: string, m: Measured) =>
    console.log(
      `${mode.padEnd(22)} ${m.secondsPerRound.toFixed(2).padStart(7)} s/round  x${(m.secondsPerRound / baseline.secondsPerRound).toFixed(2)}` +
        (m.sentPerRound === undefined ? "" : `  ${m.sentPerRound.toFixed(2)} MB to Redis, ${m.receivedPerRound!.toFixed(2)} MB back per round`),
    );
  row("in process", baseline);
  const redis = await startRedis();
  const workers: ChildProcess[] = [];
  try {
    for (const count of [1, 2]) {
      while (workers.length < count) workers.push(await startWorker(redis.url));
      row(`${count} worker process${count === 1 ? "" : "es"}`, await measure(redis.url));
    }
  } finally {
    for (const worker of workers) worker.kill("SIGTERM");
    redis.stop();
  }
}

await main();
