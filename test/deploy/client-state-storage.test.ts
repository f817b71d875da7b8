/**
 * A served client's state (src/deploy/client/state.ts, state-file.ts): kept by run and client
 * in a 0600 file of a 0700 folder, replaced whole; a round's state counts once the round merges,
 * and the state of the round before stays beside it so that a resumed server's replayed round
 * starts where an uninterrupted one would. Bad bytes are FT366, a folder that cannot be made FT367.
 */
import { readdirSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { FileStateStorage } from "../../src/deploy/client/state-file.js";
import { ClientStateKeeper, decodeStates, encodeStates, MemoryStateStorage } from "../../src/deploy/client/state.js";
import { tempDir } from "../run/temp-dir.js";

const head = (value: number) => new Map([["heads.b", { dtype: "float32" as const, shape: [1, 3], data: Float32Array.of(value, value + 1, value + 2) }]]);
const valueOf = (state: { tensors: ReadonlyMap<string, { data: ArrayLike<number> }> } | undefined) => state?.tensors.get("heads.b")!.data[0];

describe("a served client's state", () => {
  it("is a 0600 file in 0700 folders, by run and client, replaced whole, read back exactly", async () => {
    const dir = join(tempDir("fedtensor-client-state-"), "state");
    const storage = new FileStateStorage(dir);
    expect(await storage.read("run/1", "client-001")).toBeUndefined();
    await storage.write("run/1", "client-001", encodeStates([{ round: 1, tensors: head(5) }]));
    await storage.write("run/1", "client-001", encodeStates([{ round: 1, tensors: head(5) }, { round: 2, tensors: head(7) }]));
    const file = storage.describe("run/1", "client-001");
    expect(file).toBe(join(dir, "run_1", "client-001.state"));
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    expect(statSync(join(dir, "run_1")).mode & 0o777).toBe(0o700);
    expect(readdirSync(join(dir, "run_1"))).toEqual(["client-001.state"]);
    const states = decodeStates((await storage.read("run/1", "client-001"))!, file);
    expect(states.map((s) => [s.round, [...s.tensors.get("heads.b")!.data]])).toEqual([[1, [5, 6, 7]], [2, [7, 8, 9]]]);
  });

  it("counts a round's state once the round merges, and a replayed round starts from the state before it", async () => {
    const storage = new MemoryStateStorage();
    const keeper = new ClientStateKeeper(storage, "run", "client-001");
    expect(await keeper.before(1)).toBeUndefined();
    keeper.stage(1, head(10));
    expect(await keeper.commit(2)).toBe(false); // round 2 merged, but the staged state is round 1's: not kept
    expect(await keeper.before(2)).toBeUndefined();
    expect(await keeper.commit(1)).toBe(true);
    keeper.stage(2, head(20));
    // Round 2 never merged (the server was killed): the next task of round 2 starts from round 1's state again.
    expect(valueOf(await keeper.before(2))).toBe(10);
    keeper.stage(2, head(21));
    expect(await keeper.commit(2)).toBe(true);
    // A server resumed from round 1's checkpoint after round 2 merged replays round 2: from round 1's state, kept beside.
    const restarted = new ClientStateKeeper(storage, "run", "client-001");
    expect(valueOf(await restarted.before(2))).toBe(10);
    expect(valueOf(await restarted.before(3))).toBe(21);
    // Another run's or client's state is not this one's.
    expect(await new ClientStateKeeper(storage, "run", "client-002").before(3)).toBeUndefined();
  });

  it("refuses bytes that are not a client state (FT366) and a --state-dir it cannot make (FT367)", async () => {
    expect(() => decodeStates(Uint8Array.of(1, 2, 3), "x.state")).toThrow(/FT366/);
    const plain = new MemoryStateStorage();
    await plain.write("run", "client-001", encodeStates([{ round: 1, tensors: head(1) }]).subarray(0, 20));
    await expect(new ClientStateKeeper(plain, "run", "client-001").before(2)).rejects.toThrow(/FT366/);
    const file = join(tempDir("fedtensor-client-state-"), "a-file");
    writeFileSync(file, "not a folder");
    await expect(new FileStateStorage(file).write("run", "client-001", encodeStates([{ round: 1, tensors: head(1) }]))).rejects.toThrow(/FT367/);
  });
});
