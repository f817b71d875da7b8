/**
 * A served FedPer run keeps each client's head on its client. Two in-process Node clients start
 * from heads of canary values planted in their state files; every frame both ways is recorded,
 * and no frame, nor any file of the server's run folder (checkpoints included), holds a canary
 * or the trained heads the clients wrote, as float32 bytes or as text. The state files are the
 * clients' own (mode 0600 in a 0700 folder), and round 1 trained from the planted canaries.
 * Needs `npm run build` (the server runs dist/).
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { runNodeClient } from "../../src/deploy/client/node.js";
import { FileStateStorage } from "../../src/deploy/client/state-file.js";
import { decodeStates, encodeStates } from "../../src/deploy/client/state.js";
import { decodeFrame } from "../../src/deploy/protocol/frame.js";
import { clientMessageSchema } from "../../src/deploy/protocol/messages.js";
import { decodeRecord } from "../../src/deploy/protocol/record.js";
import { deadline } from "../helpers/deadline.js";
import { tempDir } from "../run/temp-dir.js";
import { serverUrl, smallServe, startProcess, writeTokens, type Process } from "./serve-helpers.js";

const started: Process[] = [];
afterAll(() => started.forEach((p) => p.child.exitCode === null && p.child.kill("SIGKILL")));

/** Client i's planted head (logistic's personal parameter b, [10]): values no training or data would hold. */
const canary = (i: number) => Float32Array.from({ length: 10 }, (_, k) => 7777.125 + 100 * i + k * 1.0625);

/** Every 4-byte float of `values` and every 8-byte pair of neighbours, and their texts as JSON or a log would print them. */
function needles(values: Float32Array, singles: boolean): Buffer[] {
  const bytes = Buffer.from(values.buffer, values.byteOffset, values.byteLength);
  const out: Buffer[] = [];
  for (let k = 0; k + 1 < values.length; k++) out.push(bytes.subarray(4 * k, 4 * k + 8));
  if (singles) for (let k = 0; k < values.length; k++) out.push(bytes.subarray(4 * k, 4 * k + 4), Buffer.from(String(values[k])), Buffer.from(values[k]!.toFixed(3)));
  return out;
}

const found = (haystack: Uint8Array, needle: Buffer) => Buffer.from(haystack.buffer, haystack.byteOffset, haystack.byteLength).indexOf(needle) >= 0;

describe("a served FedPer run keeps each client's head at the client", () => {
  it("no frame either way, nor the run folder, holds a planted or trained head; the state files are the clients' own", async () => {
    const dir = tempDir("fedtensor-serve-state-");
    const out = join(dir, "run");
    const { path, tokens } = writeTokens(dir, 2);
    const server = startProcess(smallServe(path, out, "--model", "logistic", "--algorithm", "fedper", "--rounds", "2", "--clients-per-round", "2", "--min-clients", "2"));
    started.push(server);
    const url = await serverUrl(server);
    // Client ids are the server's (client-001, client-002 in token order): the canaries go where each will look.
    const stateDirs = [0, 1].map((i) => join(dir, `state-${i}`));
    const storages = stateDirs.map((d) => new FileStateStorage(d));
    await Promise.all([0, 1].map((i) => storages[i]!.write("run", `client-00${i + 1}`, encodeStates([{ round: 0, tensors: new Map([["heads.b", { dtype: "float32", shape: [1, 10], data: canary(i) }]]) }]))));
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
    expect(server.output()).toMatch(/round 2\/2: 2 of 2 clients merged/);

    for (const i of [0, 1]) {
      expect(logs[i]!.join("\n")).toMatch(/round 1: starting from this client's state of round 0/);
      expect(logs[i]!.join("\n")).toMatch(/round 2: starting from this client's state of round 1/);
    }
    const trained = [0, 1].map((i) => {
      const file = storages[i]!.describe("run", `client-00${i + 1}`);
      expect(statSync(file).mode & 0o777).toBe(0o600);
      expect(statSync(join(stateDirs[i]!, "run")).mode & 0o777).toBe(0o700);
      const states = decodeStates(readFileSync(file), file);
      expect(states.map((s) => s.round)).toEqual([1, 2]);
      const head = states.map((s) => s.tensors.get("heads.b")!.data as Float32Array);
      // Trained from the canaries: moved by training, still near them (a fresh head is near 0).
      for (const h of head) {
        expect([...h].some((v, k) => v !== canary(i)[k])).toBe(true);
        expect(Math.abs(h[0]! - canary(i)[0]!)).toBeLessThan(100);
      }
      return head;
    });

    // The check finds what it looks for: the state files hold the trained heads' bytes, a record of the canaries theirs.
    expect(needles(canary(0), true).filter((n) => n.length > 4 || found(encodeStates([{ round: 0, tensors: new Map([["heads.b", { dtype: "float32", shape: [10], data: canary(0) }]]) }]), n)).length).toBe(needles(canary(0), true).length);
    for (const i of [0, 1]) expect(needles(trained[i]![1]!, false).every((n) => found(readFileSync(storages[i]!.describe("run", `client-00${i + 1}`)), n))).toBe(true);

    const runFiles = readdirSync(out).map((name) => join(out, name)).filter((p) => statSync(p).isFile()).map((p) => new Uint8Array(readFileSync(p)));
    expect(runFiles.length).toBeGreaterThan(3);
    for (const i of [0, 1]) {
      const secrets = [...needles(canary(i), true), ...trained[i]!.flatMap((h) => needles(h, false))];
      for (const bytes of [...frames, ...runFiles]) expect(secrets.filter((n) => found(bytes, n)).map((n) => n.toString("hex"))).toEqual([]);
    }
    // What the clients sent: hello, ready and the accumulators only.
    for (const bytes of sent) {
      const { header, body } = decodeFrame(bytes, clientMessageSchema, { update: 1e9, secagg: 1e9 }, 2e9);
      expect(["hello", "ready", "update"]).toContain(header.type);
      if (header.type === "update") expect([...decodeRecord(body).keys()].every((name) => /^acc\d+$/.test(name))).toBe(true);
    }
  }, deadline(120_000));
});
