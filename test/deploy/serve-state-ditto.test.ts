/**
 * Ditto served: each client's personal model stays in its state file. Every frame both ways and
 * the server's run folder are searched for the personal models the clients wrote (200 pairs of
 * neighbouring float32s each): none is there, while the global model's updates go to the server
 * in the clear (the plain chain). Needs `npm run build` (the server runs dist/).
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { decodeFrame } from "../../src/deploy/protocol/frame.js";
import { clientMessageSchema } from "../../src/deploy/protocol/messages.js";
import { decodeRecord } from "../../src/deploy/protocol/record.js";
import { deadline } from "../helpers/deadline.js";
import { leaks, needles, statefulRun } from "./serve-state-helpers.js";

describe("Ditto served", () => {
  it("keeps each client's personal model at the client: in no frame and no file of the run folder", async () => {
    const run = await statefulRun(["--algorithm", "ditto"]);
    expect(run.serverLog).toMatch(/round 2\/2: 2 of 2 clients merged/);
    for (const i of [0, 1]) {
      expect(run.logs[i]!.join("\n")).toMatch(/round 1: no client state yet/);
      expect(run.logs[i]!.join("\n")).toMatch(/round 2: starting from this client's state of round 1/);
      expect(run.states[i]!.map((s) => s.round)).toEqual([1, 2]);
      // The personal weights that round 2's training moved: the others (the rows of MNIST's
      // always-black border pixels) still hold the initial global model, which every client is sent.
      const [before, after] = run.states[i]!.map((s) => [...s.tensors.values()].map((t) => t.data as Float32Array));
      const pairs = after!.flatMap((p, t) => needles(p, false).filter((_, k) => p[k] !== before![t]![k] && p[k + 1] !== before![t]![k + 1]));
      expect(pairs.length).toBeGreaterThan(200);
      const secrets = Array.from({ length: 200 }, (_, k) => pairs[Math.floor((k * pairs.length) / 200)]!);
      // The search finds what it looks for: every needle is in the client's own state file.
      expect(leaks(secrets, [readFileSync(run.stateFiles[i]!)])).toHaveLength(200);
      expect(leaks(secrets, [...run.frames, ...run.runFiles])).toEqual([]);
    }
    // What the clients sent: hello, ready and the accumulators of the global model's update only.
    const updates = run.sent.map((bytes) => decodeFrame(bytes, clientMessageSchema, { update: 1e9, secagg: 1e9 }, 2e9)).filter(({ header }) => header.type === "update");
    expect(updates.length).toBe(4);
    for (const { body } of updates) expect([...decodeRecord(body).keys()].every((name) => /^acc\d+$/.test(name))).toBe(true);
  }, deadline(120_000));
});
