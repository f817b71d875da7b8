/**
 * `fedtensor worker --redis redis://host:port`: runs chunks of clients for coordinators
 * (`fedtensor run --engine redis://host:port`) through BullMQ on that Redis, until stopped.
 * Any number of workers on any machines may join or leave at any time (docs/distributed.md).
 */
import { parseArgs } from "node:util";
import { ftError } from "../errors/error.js";
import { redactCredentials } from "../errors/redact.js";
import { redisUrlProblem } from "../lib/run/engine/url.js";
import { UsageError, type Command } from "./command.js";

/** Timers take at most 2^31 - 1 ms (Node turns a longer delay into 1 ms): the bound of every option here. */
const largest = 2 ** 31 - 1;

const positiveInteger = (option: string, text: string | undefined, fallback: number): number => {
  if (text === undefined) return fallback;
  const value = Number(text);
  if (!Number.isSafeInteger(value) || value < 1 || value > largest) throw ftError("FT305", { option: `--${option}`, why: `expected a whole number from 1 to ${largest}, got ${text}` });
  return value;
};

export const workerCommand: Command = {
  name: "worker",
  summary: "run chunks of clients for `fedtensor run --engine redis://...` (BullMQ on Redis)",
  usage: [
    "usage: fedtensor worker --redis redis://host:port [--concurrency 1] [--lock-duration 30000] [--stalled-interval 30000]",
    "",
    "Takes chunk jobs from the Redis at --redis until stopped (Ctrl-C). Each job names its round's",
    "program, data set and clients; the worker loads the data itself (it needs the same data sets",
    "as `fedtensor run`) and returns the chunk's partial accumulator. Start any number, anywhere.",
    "",
    "  --redis URL              the Redis the coordinator uses (its --engine)",
    "  --concurrency N          chunks run at once (default 1)",
    "  --lock-duration MS       a worker silent this long is taken for dead, its job retried (default 30000)",
    "  --stalled-interval MS    how often workers look for jobs of dead workers (default 30000)",
  ].join("\n"),
  async run(args) {
    let values: Record<string, string | undefined>;
    try {
      ({ values } = parseArgs({
        args: [...args],
        options: { redis: { type: "string" }, concurrency: { type: "string" }, "lock-duration": { type: "string" }, "stalled-interval": { type: "string" } },
        strict: true,
        allowPositionals: false,
      }) as { values: Record<string, string | undefined> });
    } catch (error) {
      throw new UsageError((error as Error).message);
    }
    const url = values.redis;
    if (url === undefined) throw new UsageError("--redis redis://host:port is required");
    const problem = redisUrlProblem(url);
    if (problem !== undefined) throw ftError("FT305", { option: "--redis", why: `expected redis://host:port, got ${url}: ${problem}` });
    // Loaded here so that other commands start without TensorFlow.js and BullMQ.
    const { startWorker } = await import("../lib/run/engine/worker.js");
    const log = (line: string) => console.log(`${new Date().toISOString()} ${redactCredentials(line)}`);
    const worker = await startWorker({
      url,
      concurrency: positiveInteger("concurrency", values.concurrency, 1),
      lockDuration: positiveInteger("lock-duration", values["lock-duration"], 30_000),
      stalledInterval: positiveInteger("stalled-interval", values["stalled-interval"], 30_000),
      log,
    });
    log(`worker ${worker.id} waiting for chunks on ${url}`);
    await new Promise<void>((resolve) => {
      const stop = () => void worker.stop().then(resolve);
      process.once("SIGINT", stop);
      process.once("SIGTERM", stop);
    });
    log("worker stopped");
    // Told to stop: exit now, even if BullMQ's blocking connection still retries a Redis that is gone.
    return process.exit(0);
  },
};
