/**
 * SecAgg+'s pre-quantized path, as `fedtensor serve --aggregator distributed-dp` uses it: the
 * clients' distributed-DP encodings (integers in [0, 2^bits)) are masked as they are, and the
 * server's quantizedSum is exactly their sum mod 2^bits, so decoding it gives what the codec's
 * own sum and decode give, dropouts included. Values outside Z_M are refused before masking.
 */
import { describe, expect, it } from "vitest";
import { secureParams } from "../../src/deploy/server/secure.js";
import { distributedDpCodec } from "../../src/lib/privacy/distributed-dp-codec.js";
import { ids, runRound } from "./secagg-helpers.js";

const codec = distributedDpCodec({ length: 50, clip: 1, noiseMultiplier: 0.5, bits: 16, minClients: 3, maxClients: 4, rotationKey: [12345, -678] });
const d = codec.calibration.dimension;
const updates = ids(4).map((_, c) => Float32Array.from({ length: 50 }, (_, i) => Math.sin(i + 7 * c) * 0.2));

describe("SecAgg+ over distributed-DP encodings", () => {
  it("sums the encodings mod 2^bits exactly, and the decoded sum is the codec's", async () => {
    const encoded = updates.map((u) => codec.encode(u));
    const words = new Map(ids(4).map((id, c) => [id, new Uint32Array(encoded[c]!.buffer)]));
    const run = await runRound(secureParams(1, d, 4, codec.calibration.bits), words);
    if (run.outcome.kind !== "done") throw new Error(`round did not finish: ${JSON.stringify(run.outcome)}`);
    const expected = codec.sum(encoded);
    expect(Array.from(run.outcome.result.quantizedSum)).toEqual(Array.from(expected));
    const sum = run.outcome.result.quantizedSum;
    expect(Array.from(codec.decode(new Int32Array(sum.buffer, sum.byteOffset, sum.length), 4))).toEqual(Array.from(codec.decode(expected, 4)));
    // The noise is the clients': the decoded mean is near the true mean, not equal to it.
    const mean = codec.decode(expected, 4).map((v) => v / 4);
    const truth = Float32Array.from({ length: 50 }, (_, i) => updates.reduce((s, u) => s + u[i]!, 0) / 4);
    const error = Math.sqrt(mean.reduce((s, v, i) => s + (v - truth[i]!) ** 2, 0) / 50);
    expect(error).toBeGreaterThan(0);
    expect(error).toBeLessThan(1);
  });

  it("a client dropping after its keys leaves out exactly its encoding", async () => {
    const encoded = updates.map((u) => codec.encode(u));
    const clientIds = ids(4);
    const words = new Map(clientIds.map((id, c) => [id, new Uint32Array(encoded[c]!.buffer)]));
    const run = await runRound(secureParams(2, d, 4, codec.calibration.bits), words, { dropAt: { "masked-input": [clientIds[3]!] } });
    if (run.outcome.kind !== "done") throw new Error(`round did not finish: ${JSON.stringify(run.outcome)}`);
    expect(run.outcome.result.clients).toBe(3);
    expect(Array.from(run.outcome.result.quantizedSum)).toEqual(Array.from(codec.sum(encoded.slice(0, 3))));
  });

  it("refuses a pre-quantized value outside [0, 2^bits) before masking (FT338)", async () => {
    const bad = new Map(ids(3).map((id) => [id, new Uint32Array(d).fill(2 ** 16)]));
    await expect(runRound(secureParams(3, d, 3, 16), bad)).rejects.toThrow(/^FT338: .*outside \[0, 65536\)/);
  });
});
