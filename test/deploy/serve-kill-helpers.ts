/**
 * Killing `fedtensor client` processes with SIGKILL at a chosen SecAgg+ step, deterministically:
 * the victims connect through bench/step-trap.ts's relays (the serve demo uses them too).
 */
import { afterAll, expect } from "vitest";
import { inProcessCli } from "../run/cli.js";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { encodeRecord } from "../../src/deploy/protocol/record.js";
import { federatedData } from "../../src/lib/run/setup.js";
import type { StepTrap } from "../../bench/step-trap.js";
import { tempDir } from "../run/temp-dir.js";
import { serverUrl, smallServe, startProcess, writeTokens, type Process } from "./serve-helpers.js";

export { stepTrap } from "../../bench/step-trap.js";

/**
 * What a test file starts: `track` a process to have it killed after the file's tests, push a
 * trap on `traps` to have it closed then.
 */
export function killedAfterAll(): { track: (p: Process) => Process; traps: StepTrap[] } {
  const started: Process[] = [];
  const traps: StepTrap[] = [];
  afterAll(() => {
    started.forEach((p) => p.child.exitCode === null && p.child.signalCode === null && p.child.kill("SIGKILL"));
    traps.forEach((t) => t.close());
  });
  return { track: (p) => (started.push(p), p), traps };
}

/**
 * `fedtensor serve` of smallServe's run with `extra` options, which must refuse to start: what
 * it printed, for the test to read the reason. Run in this process through the CLI's own
 * `main` (the code a spawned `fedtensor` runs, less a second of start-up per refusal); the
 * served tests' processes show the exit status and the output of a real one.
 */
export function refusedServe(tokensPath: string, out: string): (...extra: string[]) => Promise<string> {
  return async (...extra) => {
    const { status, output } = await inProcessCli(smallServe(tokensPath, out, ...extra));
    expect(status, output).not.toBe(0);
    return output;
  };
}

/**
 * Record files (--data) of clients 0..count-1 of the 20-client IID MNIST partition that
 * smallServe's runs use, written in `dir`: each client process then holds its own examples only,
 * not MNIST whole. A client keeps its identity key beside its file, so every run gets files of its own.
 */
export function partitionFiles(dir: string, count: number): string[] {
  return partitionRecords(count).map((bytes, i) => {
    const path = join(dir, `client-${i}.rec`);
    writeFileSync(path, bytes);
    return path;
  });
}

/**
 * The first `count` clients' record files' bytes (9.4 MB a client), made the first time they are
 * asked for and kept by this test process: MNIST is read into it once, not once per served run
 * (the bytes are the same each time: the partition is seeded).
 */
const records: Uint8Array[] = [];
function partitionRecords(count: number): Uint8Array[] {
  if (records.length < count) {
    const data = federatedData({ dataset: "mnist", partition: "iid", clients: 20, seed: 0, clientHoldout: 0 } as never);
    for (let i = records.length; i < count; i++) {
      const indices = data.clientIndices[i]!;
      const x = new Float32Array(indices.length * 784);
      indices.forEach((e, k) => x.set(data.train.x.subarray(e * 784, (e + 1) * 784) as Float32Array, k * 784));
      const y = Int32Array.from(indices, (e) => data.train.y[e]!);
      records.push(encodeRecord(new Map([["x", { dtype: "float32", shape: [indices.length, 784], data: x }], ["y", { dtype: "int32", shape: [indices.length], data: y }]] as const)));
    }
  }
  return records.slice(0, count);
}

/**
 * A listening `fedtensor serve` of smallServe's run with `extra` options, in a fresh folder
 * (`prefix`) with `clients` tokens and those clients' record files: the set-up of the tests
 * that start their client processes themselves (some through a step trap).
 */
export async function serveWithFiles(track: (p: Process) => Process, prefix: string, clients: number, ...extra: string[]): Promise<{ out: string; tokens: string[]; files: string[]; server: Process; url: string }> {
  const dir = tempDir(prefix);
  const out = join(dir, "run");
  const { path, tokens } = writeTokens(dir, clients);
  const files = partitionFiles(dir, clients);
  const server = track(startProcess(smallServe(path, out, ...extra)));
  return { out, tokens, files, server, url: await serverUrl(server) };
}

/** A client of a record file, its SecAgg+ identity kept beside it: started again, it is the same client to its peers. */
export const startFileClient = (url: string, token: string, file: string) => startProcess(["client", "--server", url, "--token", token, "--data", file, "--identity-key", `${file}.identity`, "--max-backoff", "1"]);
