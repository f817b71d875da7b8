/**
 * SCAFFOLD served with --aggregator secure: each client's control variate stays in its state
 * file. Every frame both ways and the server's run folder are searched for the controls the
 * clients wrote (200 pairs of neighbouring float32s each): none is there; the clients sent SecAgg+
 * messages only after their hello and ready. Needs `npm run build` (the server runs dist/).
 */
import { describe, expect, it } from "vitest";
import { decodeFrame } from "../../src/deploy/protocol/frame.js";
import { clientMessageSchema } from "../../src/deploy/protocol/messages.js";
import { deadline } from "../helpers/deadline.js";
import { leaks, needles, statefulRun } from "./serve-state-helpers.js";

describe("SCAFFOLD served with SecAgg+", () => {
  it("keeps each client's controls at the client: in no frame and no file of the run folder", async () => {
    const run = await statefulRun(["--algorithm", "scaffold", "--aggregator", "secure"]);
    expect(run.serverLog).toMatch(/round 2: secure sum of 2 clients/);
    expect(run.serverLog).toMatch(/round 2\/2: 2 of 2 clients merged/);
    for (const i of [0, 1]) {
      expect(run.logs[i]!.join("\n")).toMatch(/round 1: no client state yet/);
      expect(run.logs[i]!.join("\n")).toMatch(/round 2: starting from this client's state of round 1/);
      expect(run.states[i]!.map((s) => s.round)).toEqual([1, 2]);
      const controls = run.states[i]!.flatMap((s) => [...s.tensors.values()].map((t) => t.data as Float32Array));
      // Controls that training moved (a fresh one is zeros, which any frame holds).
      const moved = controls.filter((c) => c.some((v) => v !== 0));
      expect(moved.length).toBeGreaterThan(0);
      // 200 of the pairs of non-zero neighbours, spread over the controls (all 7,850 would make the search slow).
      const pairs = moved.flatMap((c) => needles(c, false).filter((n) => n.readFloatLE(0) !== 0 && n.readFloatLE(4) !== 0));
      expect(pairs.length).toBeGreaterThan(200);
      const secrets = Array.from({ length: 200 }, (_, k) => pairs[Math.floor((k * pairs.length) / 200)]!);
      expect(leaks(secrets, [...run.frames, ...run.runFiles])).toEqual([]);
    }
    const types = new Set(run.sent.map((bytes) => decodeFrame(bytes, clientMessageSchema, { update: 1e9, secagg: 1e9 }, 2e9).header.type));
    expect(types).toEqual(new Set(["hello", "ready", "trained", "secagg"]));
  }, deadline(120_000));
});
