/**
 * A served stateful run with two in-process Node clients, each with its own --state-dir, every
 * frame both ways recorded: what the client-state tests inspect.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { afterAll, expect } from "vitest";
import { runNodeClient } from "../../src/deploy/client/node.js";
import { FileStateStorage } from "../../src/deploy/client/state-file.js";
import { decodeStates, encodeStates, type SavedState } from "../../src/deploy/client/state.js";
import type { RecordTensor } from "../../src/deploy/protocol/record.js";
import { tempDir } from "../run/temp-dir.js";
import { serverUrl, smallServe, startProcess, writeTokens, type Process } from "./serve-helpers.js";

const started: Process[] = [];
afterAll(() => started.forEach((p) => p.child.exitCode === null && p.child.kill("SIGKILL")));

export interface StatefulRun {
  /** Every frame both ways, and those the clients sent. */
  readonly frames: Uint8Array[];
  readonly sent: Uint8Array[];
  /** Each client's log lines. */
  readonly logs: string[][];
  /** Each client's state file, and its states after the run. */
  readonly stateFiles: string[];
  readonly states: SavedState[][];
  /** The bytes of every file of the server's run folder (checkpoints, metrics, log). */
  readonly runFiles: Uint8Array[];
  readonly serverLog: string;
}

/** Two clients of smallServe's logistic run with `extra` options, 2 rounds; `planted` gives client i a state of round 0. */
export async function statefulRun(extra: readonly string[], planted?: (i: number) => ReadonlyMap<string, RecordTensor>): Promise<StatefulRun> {
  const dir = tempDir("fedtensor-serve-state-");
  const out = join(dir, "run");
  const { path, tokens } = writeTokens(dir, 2);
  const server = startProcess(smallServe(path, out, "--model", "logistic", "--rounds", "2", "--clients-per-round", "2", "--min-clients", "2", ...extra));
  started.push(server);
  const url = await serverUrl(server);
  const stateDirs = [0, 1].map((i) => join(dir, `state-${i}`));
  // Client ids are the server's (client-001, client-002 in token order): a planted state goes where each will look.
  const storages = stateDirs.map((d) => new FileStateStorage(d));
  const ids = ["client-001", "client-002"];
  if (planted !== undefined) await Promise.all([0, 1].map((i) => storages[i]!.write("run", ids[i]!, encodeStates([{ round: 0, tensors: planted(i) }]))));
  const frames: Uint8Array[] = [];
  const sent: Uint8Array[] = [];
  const logs = [0, 1].map(() => [] as string[]);
  const statuses = await Promise.all(
    [0, 1].map((i) =>
      runNodeClient({
        server: url,
        token: tokens[i]!,
        data: { dataset: "mnist", clientIndex: i },
        maxBackoffMs: 1000,
        exitWhenServerStops: true,
        stateDir: stateDirs[i]!,
        log: (line) => logs[i]!.push(line),
        onSend: (bytes) => (frames.push(Uint8Array.from(bytes)), sent.push(Uint8Array.from(bytes))),
        onReceive: (bytes) => frames.push(Uint8Array.from(bytes)),
      }),
    ),
  );
  expect(statuses).toEqual([0, 0]);
  expect(await server.exited()).toBe(0);
  const stateFiles = [0, 1].map((i) => storages[i]!.describe("run", ids[i]!));
  for (const [i, file] of stateFiles.entries()) {
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(join(stateDirs[i]!, "run")).mode & 0o777).toBe(0o700);
  }
  const runFiles = readdirSync(out).map((name) => join(out, name)).filter((p) => statSync(p).isFile()).map((p) => new Uint8Array(readFileSync(p)));
  return { frames, sent, logs, stateFiles, states: stateFiles.map((file) => decodeStates(readFileSync(file), file)), runFiles, serverLog: server.output() };
}

/** Every 8-byte pair of neighbouring float32s of `values`; with `singles`, each float's 4 bytes and its texts as JSON or a log would print it. */
export function needles(values: Float32Array, singles: boolean): Buffer[] {
  const bytes = Buffer.from(values.buffer, values.byteOffset, values.byteLength);
  const out: Buffer[] = [];
  for (let k = 0; k + 1 < values.length; k++) out.push(bytes.subarray(4 * k, 4 * k + 8));
  if (singles) for (let k = 0; k < values.length; k++) out.push(bytes.subarray(4 * k, 4 * k + 4), Buffer.from(String(values[k])), Buffer.from(values[k]!.toFixed(3)));
  return out;
}

export const found = (haystack: Uint8Array, needle: Buffer) => Buffer.from(haystack.buffer, haystack.byteOffset, haystack.byteLength).indexOf(needle) >= 0;

/** The needles found in any of `places`, as hex (none expected). */
export const leaks = (secrets: readonly Buffer[], places: readonly Uint8Array[]): string[] => secrets.filter((n) => places.some((bytes) => found(bytes, n))).map((n) => n.toString("hex"));
