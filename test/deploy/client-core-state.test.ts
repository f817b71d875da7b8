/**
 * The client core with a stateful part, over a stand-in ONNX runtime that records its feeds:
 * the part reads the client's kept state (or the task's initial value when it has none), the
 * update carries the accumulator only, the next state is kept once the round merges and not
 * before, and a kept state of another shape fails the task with FT366 instead of training.
 */
import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { ClientCore, type OrtLike } from "../../src/deploy/client/core.js";
import { decodeStates, encodeStates, MemoryStateStorage } from "../../src/deploy/client/state.js";
import { decodeFrame, encodeFrame } from "../../src/deploy/protocol/frame.js";
import { clientMessageSchema, WIRE_VERSION } from "../../src/deploy/protocol/messages.js";
import { decodeRecord, encodeRecord, type RecordValue } from "../../src/deploy/protocol/record.js";
import { StandInTensor, standInOrt } from "./stand-in-ort.js";

const run = { name: "run", algorithm: "fedper", model: "tiny", batchSize: 2, epochs: 1, featureShape: [2], data: { dataset: "none", partition: "iid", clients: 2, seed: 0 } };
const model = Uint8Array.of(1, 2, 3);
const hash = createHash("sha256").update(model).digest("hex");

/** An ORT whose part returns acc0 = sum of the head, kept0 = head + 1; every run's head feed is recorded. */
function fakeOrt(heads: number[][]): OrtLike {
  return standInOrt(async (feeds) => {
    const head = Array.from(feeds["heads.b"]!.data as Float32Array);
    heads.push(head);
    return { acc0: new StandInTensor("float32", Float32Array.of(head.reduce((a, b) => a + b, 0)), []), kept0: new StandInTensor("float32", Float32Array.from(head, (v) => v + 1), [1, 2]) };
  });
}

const task = (round: number, initial: number[]) => {
  const body = encodeRecord(new Map<string, RecordValue>([["lr", 0.1], ["initial:heads.b", { dtype: "float32", shape: [1, initial.length], data: Float32Array.from(initial) }]]));
  return encodeFrame({ v: WIRE_VERSION, type: "task", round, task: `t${round}`, part: hash, steps: 1, deadlineMs: 1000 }, body);
};
const roundEnd = (round: number, merged: boolean) => encodeFrame({ v: WIRE_VERSION, type: "round-end", round, merged, clients: 1, loss: null });
const decoded = (frames: Uint8Array[]) => frames.map((f) => decodeFrame(f, clientMessageSchema, { update: 1e6, secagg: 1e6 }, 2e6));

async function joined(storage: MemoryStateStorage, heads: number[][]): Promise<ClientCore> {
  const core = new ClientCore(fakeOrt(heads), "token", "node", async () => ({ x: Float32Array.of(1, 2, 3, 4), y: Int32Array.of(0, 1) }), { status: () => {} }, undefined, storage);
  await core.handle(encodeFrame({ v: WIRE_VERSION, type: "welcome", clientId: "client-001", run }));
  const part = { v: WIRE_VERSION, type: "part", hash, inputs: ["lr", "heads.b", "x", "y", "mask", "count"], outputs: ["acc0", "kept0"], checks: [], state: [{ input: "heads.b", output: "kept0" }] };
  await core.handle(encodeFrame(part, model));
  return core;
}

describe("the client core's state", () => {
  it("reads the kept state or the initial value, sends the accumulator only, and keeps the next state once the round merges", async () => {
    const storage = new MemoryStateStorage();
    const heads: number[][] = [];
    const core = await joined(storage, heads);
    const [update] = decoded(await core.handle(task(1, [0.5, 0.25])));
    expect(update!.header.type).toBe("update");
    expect([...decodeRecord(update!.body).keys()]).toEqual(["acc0"]);
    // Not merged: nothing kept, round 2 starts from the initial value again.
    await core.handle(roundEnd(1, false));
    expect(await storage.read("run", "client-001")).toBeUndefined();
    await core.handle(task(2, [0.5, 0.25]));
    await core.handle(roundEnd(2, true));
    await core.handle(task(3, [0.5, 0.25]));
    expect(heads).toEqual([[0.5, 0.25], [0.5, 0.25], [1.5, 1.25]]);
    const states = decodeStates((await storage.read("run", "client-001"))!, "memory");
    expect(states.map((s) => [s.round, Array.from(s.tensors.get("heads.b")!.data)])).toEqual([[2, [1.5, 1.25]]]);
  });

  it("fails the task with FT366 when the kept state is not the part's shape", async () => {
    const storage = new MemoryStateStorage();
    await storage.write("run", "client-001", encodeStates([{ round: 1, tensors: new Map([["heads.b", { dtype: "float32", shape: [1, 3], data: Float32Array.of(1, 2, 3) }]]) }]));
    const heads: number[][] = [];
    const core = await joined(storage, heads);
    const [failed] = decoded(await core.handle(task(2, [0.5, 0.25])));
    expect(failed!.header).toMatchObject({ type: "failed", round: 2 });
    expect((failed!.header as { reason: string }).reason).toMatch(/^FT366: .*heads\.b is \[1, 2\], the kept state's \[1, 3\]/);
    expect(heads).toEqual([]);
  });
});
