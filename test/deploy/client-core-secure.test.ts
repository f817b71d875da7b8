/**
 * The client core in a secure round, over a stand-in ONNX runtime whose training the test holds
 * open: the task is answered later (ClientCore.handle's `later`), the round's key setup is
 * answered while the client trains, the masked input waits for the training, and the server's
 * sum is the held accumulator times the task's scale. A client whose training fails says so and
 * sends no masked input.
 */
import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { ClientCore, type OrtLike } from "../../src/deploy/client/core.js";
import { decodeFrame, encodeFrame } from "../../src/deploy/protocol/frame.js";
import { clientMessageSchema, WIRE_VERSION } from "../../src/deploy/protocol/messages.js";
import { encodeRecord } from "../../src/deploy/protocol/record.js";
import { encodeMessage, SecAggClient, SecAggServer, type ServerMessage } from "../../src/deploy/secagg/index.js";
import { secureParams } from "../../src/deploy/server/secure.js";
import { StandInTensor, standInOrt } from "./stand-in-ort.js";

const run = { name: "run", algorithm: "fedavg", model: "tiny", batchSize: 2, epochs: 1, featureShape: [2], data: { dataset: "none", partition: "iid", clients: 2, seed: 0 }, minClients: 2 };
const model = Uint8Array.of(1, 2, 3);
const hash = createHash("sha256").update(model).digest("hex");
const accumulator = Float32Array.of(1.5, -0.5, 0.25);

/** An ORT whose part returns `accumulator` once `gate` resolves (or fails when it rejects). */
function gatedOrt(gate: Promise<void>): OrtLike {
  return standInOrt(async () => {
    await gate;
    return { acc0: new StandInTensor("float32", accumulator.slice(), [3]) };
  });
}

const bodyOf = (frame: Uint8Array): Uint8Array => frame.subarray(4 + new DataView(frame.buffer, frame.byteOffset).getUint32(0, true));
const kind = (frame: Uint8Array) => decodeFrame(frame, clientMessageSchema, { update: 1e6, secagg: 1e6 }, 2e6).header.type;
const secagg = (message: ServerMessage) => encodeFrame({ v: WIRE_VERSION, type: "secagg", round: 1 }, encodeMessage(message));

async function joined(gate: Promise<void>): Promise<{ core: ClientCore; later: Uint8Array[] }> {
  const core = new ClientCore(gatedOrt(gate), "token", "node", async () => ({ x: Float32Array.of(1, 2, 3, 4), y: Int32Array.of(0, 1) }), { status: () => {} });
  await core.handle(encodeFrame({ v: WIRE_VERSION, type: "welcome", clientId: "client-001", run }));
  await core.handle(encodeFrame({ v: WIRE_VERSION, type: "part", hash, inputs: ["lr", "x", "y", "mask", "count"], outputs: ["acc0"], checks: [] }, model));
  const later: Uint8Array[] = [];
  const task = encodeFrame({ v: WIRE_VERSION, type: "task", round: 1, task: "t1", part: hash, steps: 1, deadlineMs: 1000, scale: 0.5 }, encodeRecord(new Map([["lr", 0.1]])));
  expect(await core.handle(task, (frame) => later.push(frame))).toEqual([]);
  return { core, later };
}

/** A secure sum of client-001 (the core) and client-002 (an honest in-memory client); `deliver` hands the core its message of a step. */
async function sumWith(deliver: (frame: Uint8Array, step: string) => Promise<Uint8Array[]>, other: Float32Array, onStep: (step: string) => Promise<void> = async () => {}) {
  const server = new SecAggServer(secureParams(1, 3, 2, undefined, {}, { clipping_range: 4, quantization_range: 2 ** 16 }, 2), ["client-001", "client-002"]);
  let peer: SecAggClient | undefined;
  let outgoing = server.start() as Map<string, ServerMessage>;
  for (;;) {
    const step = [...outgoing.values()][0]!.step;
    await onStep(step);
    const toCore = outgoing.get("client-001");
    const toPeer = outgoing.get("client-002")!;
    const peerAnswer = peer === undefined ? (peer = SecAggClient.fromSetup(encodeMessage(toPeer))).advertiseKeys() : await peer.respond(encodeMessage(toPeer), () => other);
    server.receive("client-002", encodeMessage(peerAnswer));
    if (toCore !== undefined) for (const reply of await deliver(secagg(toCore), step)) server.receive("client-001", bodyOf(reply));
    const outcome = await server.advance();
    if (outcome.kind === "done") return outcome.result;
    if (outcome.kind === "aborted") throw new Error(outcome.reason);
    outgoing = outcome.messages as Map<string, ServerMessage>;
  }
}

describe("the client core in a secure round", () => {
  it("answers the key setup while it trains, masks its input once trained, and the sum is its scaled accumulator plus the other's", async () => {
    let open!: () => void;
    const { core, later } = await joined(new Promise<void>((resolve) => (open = resolve)));
    const other = Float32Array.of(0.5, 0.5, -1);
    const result = await sumWith(
      async (frame, step) => {
        // The setup and share-keys are answered with the training held open (were they to wait for it, the test would hang).
        if (step !== "masked-input") return core.handle(frame);
        // The masked input is the first answer that needs the training: it cannot come while the training is held.
        let settled = false;
        const answer = core.handle(frame).finally(() => (settled = true));
        for (let i = 0; i < 10; i++) await new Promise((resolve) => setImmediate(resolve));
        expect(settled).toBe(false);
        expect(later).toEqual([]);
        open();
        const replies = await answer;
        expect(later.map(kind)).toEqual(["trained"]);
        expect(replies.map(kind)).toEqual(["secagg"]);
        return replies;
      },
      other,
      async (step) => {
        if (step === "advertise-keys" || step === "share-keys") expect(later).toEqual([]);
      },
    );
    expect(result.included).toEqual(["client-001", "client-002"]);
    for (let i = 0; i < 3; i++) expect(result.sum[i]).toBeCloseTo(accumulator[i]! * 0.5 + other[i]!, 4);
  });

  it("says its task failed when the training fails, and sends no masked input: the other's input stays hidden, the round aborts", async () => {
    let fail!: (error: Error) => void;
    const { core, later } = await joined(new Promise<void>((_, reject) => (fail = reject)));
    const sum = sumWith(async (frame, step) => {
      if (step === "masked-input") fail(new Error("the session ran out of memory"));
      return core.handle(frame);
    }, Float32Array.of(0.5, 0.5, -1));
    await expect(sum).rejects.toThrow(/masked-input/);
    expect(later.map(kind)).toEqual(["failed"]);
  });
});
