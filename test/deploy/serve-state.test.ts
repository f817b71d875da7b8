/**
 * A served FedPer run keeps each client's head on its client. Two in-process Node clients start
 * from heads of canary values planted in their state files; every frame both ways is recorded,
 * and no frame, nor any file of the server's run folder (checkpoints included), holds a canary
 * or the trained heads the clients wrote, as float32 bytes or as text. The state files are the
 * clients' own (mode 0600 in a 0700 folder), and round 1 trained from the planted canaries.
 * Needs `npm run build` (the server runs dist/).
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { encodeStates } from "../../src/deploy/client/state.js";
import { decodeFrame } from "../../src/deploy/protocol/frame.js";
import { clientMessageSchema } from "../../src/deploy/protocol/messages.js";
import { decodeRecord } from "../../src/deploy/protocol/record.js";
import { deadline } from "../helpers/deadline.js";
import { found, leaks, needles, statefulRun } from "./serve-state-helpers.js";

/** Client i's planted head (logistic's personal parameter b, [10]): values no training or data would hold. */
const canary = (i: number) => Float32Array.from({ length: 10 }, (_, k) => 7777.125 + 100 * i + k * 1.0625);
const plantedHead = (i: number) => new Map([["heads.b", { dtype: "float32" as const, shape: [1, 10], data: canary(i) }]]);

describe("a served FedPer run keeps each client's head at the client", () => {
  it("no frame either way, nor the run folder, holds a planted or trained head; the state files are the clients' own", async () => {
    const run = await statefulRun(["--algorithm", "fedper"], plantedHead);
    expect(run.serverLog).toMatch(/round 2\/2: 2 of 2 clients merged/);
    for (const i of [0, 1]) {
      expect(run.logs[i]!.join("\n")).toMatch(/round 1: starting from this client's state of round 0/);
      expect(run.logs[i]!.join("\n")).toMatch(/round 2: starting from this client's state of round 1/);
    }
    const trained = [0, 1].map((i) => {
      expect(run.states[i]!.map((s) => s.round)).toEqual([1, 2]);
      const head = run.states[i]!.map((s) => s.tensors.get("heads.b")!.data as Float32Array);
      // Trained from the canaries: moved by training, still near them (a fresh head is near 0).
      for (const h of head) {
        expect([...h].some((v, k) => v !== canary(i)[k])).toBe(true);
        expect(Math.abs(h[0]! - canary(i)[0]!)).toBeLessThan(100);
      }
      return head;
    });

    // The check finds what it looks for: the state files hold the trained heads' bytes, a record of the canaries their floats.
    for (const i of [0, 1]) expect(leaks(needles(trained[i]![1]!, false), [readFileSync(run.stateFiles[i]!)])).toHaveLength(9);
    const plantedRecord = encodeStates([{ round: 0, tensors: plantedHead(0) }]);
    expect(needles(canary(0), true).filter((n) => n.length === 4 && found(plantedRecord, n))).toHaveLength(10);

    expect(run.runFiles.length).toBeGreaterThan(3);
    for (const i of [0, 1]) {
      const secrets = [...needles(canary(i), true), ...trained[i]!.flatMap((h) => needles(h, false))];
      expect(leaks(secrets, [...run.frames, ...run.runFiles])).toEqual([]);
    }
    // What the clients sent: hello, ready and the accumulators only.
    for (const bytes of run.sent) {
      const { header, body } = decodeFrame(bytes, clientMessageSchema, { update: 1e9, secagg: 1e9 }, 2e9);
      expect(["hello", "ready", "update"]).toContain(header.type);
      if (header.type === "update") expect([...decodeRecord(body).keys()].every((name) => /^acc\d+$/.test(name))).toBe(true);
    }
  }, deadline(120_000));
});
