/**
 * What the coordinator says when its workers are gone mid-round (real processes, a real
 * redis-server): the chunks that still wait, not the round's every chunk, since the workers
 * that left may have done some. The runs report after --wait-notice 2 (the "no worker" notice
 * after 2 s, "still waiting" after 3 s) instead of the default 10 s and 15 s: what they say is the
 * same, and a test need not wait it out.
 */
import { afterEach, describe, expect, test } from "vitest";
import type { ChildProcess } from "node:child_process";
import { redisBinary, startRedis } from "../../bench/redis-server.js";
import { startCli } from "./cli.js";
import { deadline } from "../helpers/deadline.js";
import { tempDir } from "./temp-dir.js";

if (redisBinary === undefined) console.log("engine waiting test skipped: redis-server is not installed (apt-get install redis-server)");

const started: ChildProcess[] = [];
afterEach(() => {
  for (const child of started.splice(0)) if (child.exitCode === null) child.kill("SIGKILL");
});

/** A process and its output so far, with a wait for a line. */
function launch(args: string[]) {
  const child = startCli(args);
  started.push(child);
  const state = { output: "" };
  child.stdout!.on("data", (chunk: Buffer) => (state.output += chunk.toString()));
  child.stderr!.on("data", (chunk: Buffer) => (state.output += chunk.toString()));
  const waitFor = (pattern: RegExp) =>
    new Promise<void>((resolve, reject) => {
      const check = () => {
        if (pattern.test(state.output)) {
          child.stdout!.off("data", check);
          resolve();
        }
      };
      child.stdout!.on("data", check);
      child.once("exit", () => reject(new Error(`exited before ${pattern}: ${state.output}`)));
      check();
    });
  return { child, state, waitFor };
}

describe.skipIf(redisBinary === undefined)("a round whose workers left", () => {
  test("'k of 8 chunks wait' counts only the chunks not done", async () => {
    const redis = await startRedis();
    try {
      const worker = launch(["worker", "--redis", redis.url]);
      await worker.waitFor(/waiting for chunks/);
      const run = launch(["run", "--model", "logistic", "--clients", "20", "--clients-per-round", "8", "--chunk-clients", "1", "--rounds", "1", "--engine", redis.url, "--wait-notice", "2", "--out", tempDir("ft-engine-wait-")]);
      // Killed once it has started its second chunk (with concurrency 1, only after the first
      // was done in Redis): the rest of the round waits for a worker that never comes.
      await worker.waitFor(/round 1 chunk \d: 1 clients[^]*round 1 chunk \d: 1 clients/);
      worker.child.kill("SIGKILL");
      await new Promise((resolve) => worker.child.once("exit", resolve));
      // Each chunk it started before its last one is done in Redis; the last may or may not be.
      const starts = worker.state.output.match(/round 1 chunk \d: 1 clients/g)!.length;
      await run.waitFor(/chunks wait in Redis/);
      const waiting = Number(/round 1: (\d+) of 8 chunks wait in Redis at .* and no worker is connected/.exec(run.state.output)![1]);
      expect(starts).toBeGreaterThanOrEqual(2);
      expect(waiting).toBeGreaterThanOrEqual(8 - starts);
      expect(waiting).toBeLessThanOrEqual(8 - (starts - 1));
    } finally {
      redis.kill();
    }
  }, deadline(120_000));

  test("a worker killed mid-chunk: the coordinator says what the round waits for and when it gives up (issue 34)", async () => {
    const redis = await startRedis();
    try {
      // Default locks (30 s): the killed worker's chunk waits for its lock to lapse.
      const doomed = launch(["worker", "--redis", redis.url]);
      await doomed.waitFor(/waiting for chunks/);
      const run = launch(["run", "--model", "logistic", "--clients", "20", "--clients-per-round", "4", "--chunk-clients", "1", "--rounds", "1", "--engine", redis.url, "--wait-notice", "2", "--out", tempDir("ft-engine-stall-")]);
      await doomed.waitFor(/round 1 chunk \d: 1 clients/);
      doomed.child.kill("SIGKILL");
      await new Promise((resolve) => doomed.child.once("exit", resolve));
      const survivor = launch(["worker", "--redis", redis.url]);
      await survivor.waitFor(/waiting for chunks/);
      await run.waitFor(/chunks not done after/);
      expect(run.state.output).toMatch(
        /round 1: [1-4] of 4 chunks not done after \d+ s, with 1 worker connected; a chunk whose worker died goes to another once its lock lapses \(the worker's --lock-duration, 30 s by default, then a --stalled-interval check, 30 s by default: about a minute\); a chunk stalled 3 times, or failed on 3 attempts, stops the run with FT320/,
      );
    } finally {
      redis.kill();
    }
  }, deadline(180_000));
});
