/**
 * What a client sends: every frame two in-process clients send to a `fedtensor serve` run is
 * recorded, plain and secure. Each must be one of the protocol's client messages; no update
 * may carry a tensor other than the accumulator's; and no frame may contain any run of the
 * client's example bytes (64 bytes of an image from its first inked pixel) or of its labels
 * (32 labels as the int32 bytes a batch holds): the attack a server would make on them.
 */
import { afterAll, describe, expect, it } from "vitest";
import { join } from "node:path";
import { runNodeClient } from "../../src/deploy/client/node.js";
import { decodeFrame } from "../../src/deploy/protocol/frame.js";
import { clientMessageSchema } from "../../src/deploy/protocol/messages.js";
import { decodeRecord, encodeRecord } from "../../src/deploy/protocol/record.js";
import { clientBatches } from "../../src/deploy/client/batches.js";
import { federatedData } from "../../src/lib/run/setup.js";
import { tempDir } from "../run/temp-dir.js";
import { serverUrl, smallServe, startProcess, writeTokens, type Process } from "./serve-helpers.js";
import { deadline } from "../helpers/deadline.js";

const started: Process[] = [];
afterAll(() => started.forEach((p) => p.child.exitCode === null && p.child.kill("SIGKILL")));

/** Byte windows of client `index`'s examples and labels, as the run's partition gives them. */
function exampleWindows(index: number): Buffer[] {
  const data = federatedData({ dataset: "mnist", partition: "iid", clients: 20, seed: 0, clientHoldout: 0 } as never);
  const windows: Buffer[] = [];
  const indices = data.clientIndices[index]!;
  for (const example of indices) {
    const pixels = data.train.x.subarray(example * 784, (example + 1) * 784) as Float32Array;
    const first = pixels.findIndex((v) => v !== 0);
    windows.push(Buffer.from(pixels.slice(first, first + 16).buffer));
  }
  for (let start = 0; start + 32 <= indices.length; start += 32) {
    windows.push(Buffer.from(Int32Array.from(indices.subarray(start, start + 32), (e) => data.train.y[e]!).buffer));
  }
  return windows;
}

async function recordedRun(extra: string[]): Promise<{ frames: Map<number, Uint8Array[]>; log: string }> {
  const dir = tempDir("fedtensor-privacy-");
  const { path, tokens } = writeTokens(dir, 2);
  const server = startProcess(smallServe(path, join(dir, "run"), "--rounds", "2", "--clients-per-round", "2", "--min-clients", "2", ...extra));
  started.push(server);
  const url = await serverUrl(server);
  const frames = new Map<number, Uint8Array[]>([[0, []], [1, []]]);
  const statuses = await Promise.all(
    [0, 1].map((i) =>
      runNodeClient({ server: url, token: tokens[i]!, data: { dataset: "mnist", clientIndex: i }, maxBackoffMs: 1000, exitWhenServerStops: true, log: () => {}, onSend: (bytes) => frames.get(i)!.push(Uint8Array.from(bytes)) }),
    ),
  );
  expect(statuses).toEqual([0, 0]);
  expect(await server.exited()).toBe(0);
  return { frames, log: server.output() };
}

function checkFrames(frames: Map<number, Uint8Array[]>, allowed: readonly string[]): Map<string, number> {
  const kinds = new Map<string, number>();
  for (const [index, sent] of frames) {
    const windows = exampleWindows(index);
    for (const bytes of sent) {
      const { header, body } = decodeFrame(bytes, clientMessageSchema, { update: 1e9, secagg: 1e9 }, 2e9);
      kinds.set(header.type, (kinds.get(header.type) ?? 0) + 1);
      expect(allowed).toContain(header.type);
      if (header.type === "update") expect([...decodeRecord(body).keys()].every((name) => /^acc\d+$/.test(name))).toBe(true);
      const buffer = Buffer.from(bytes);
      const leaked = windows.findIndex((w) => buffer.indexOf(w) >= 0);
      expect(leaked, `frame ${header.type} of client ${index} holds example bytes (window ${leaked})`).toBe(-1);
    }
  }
  return kinds;
}

describe("what a served client sends", () => {
  it("the windows find a client's examples where they are sent (the check is not vacuous)", () => {
    const data = federatedData({ dataset: "mnist", partition: "iid", clients: 20, seed: 0, clientHoldout: 0 } as never);
    const indices = data.clientIndices[0]!;
    const x = new Float32Array(indices.length * 784);
    indices.forEach((e, i) => x.set(data.train.x.subarray(e * 784, (e + 1) * 784) as Float32Array, i * 784));
    const shuffled = clientBatches({ x, y: Int32Array.from(indices, (e) => data.train.y[e]!) }, { steps: Math.ceil(indices.length / 20), batchSize: 20, epochs: 1, featureShape: [784] });
    const sent = Buffer.from(encodeRecord(new Map([["x", shuffled.x]])));
    const windows = exampleWindows(0);
    expect(windows.filter((w) => sent.indexOf(w) >= 0).length).toBeGreaterThanOrEqual(indices.length);
  });

  it("plain rounds: hello, ready and the accumulators; no example or label bytes", async () => {
    const { frames } = await recordedRun([]);
    const kinds = checkFrames(frames, ["hello", "ready", "update"]);
    expect(kinds.get("update")).toBe(4);
  }, deadline(120_000));

  it("secure rounds: no update in the clear, only SecAgg+ messages; no example or label bytes", async () => {
    const { frames, log } = await recordedRun(["--aggregator", "secure"]);
    const kinds = checkFrames(frames, ["hello", "ready", "trained", "secagg"]);
    expect(kinds.has("update")).toBe(false);
    // Five SecAgg+ steps per client per round (the fifth is the consistency check's signature).
    expect(kinds.get("secagg")).toBe(2 * 2 * 5);
    expect(log).toMatch(/round 2: secure sum of 2 clients/);
  }, deadline(120_000));
});
