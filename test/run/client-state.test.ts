/**
 * The clients' state store of `fedtensor run` (src/lib/run/client-state.ts): by client id, in
 * memory up to its budget and spilled to a private folder past it, read back bit for bit; a
 * round's states count only once committed; a checkpoint's companion file of them round-trips,
 * client by client, and a damaged one is FT304.
 */
import { existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { describe, expect, it } from "vitest";
import { FedTensorError } from "../../src/errors/error.js";
import { ClientStateStore, stackedStates, type ClientState } from "../../src/lib/run/client-state.js";
import { clientStatesFileName, readClientStates, writeClientStates } from "../../src/lib/run/client-state-file.js";
import { decodeSafetensors } from "../../src/lib/run/safetensors.js";
import { readCheckpoint, writeCheckpoint } from "../../src/lib/run/checkpoint.js";
import { tempDir } from "./temp-dir.js";

/** Client c's state: a head of 6 values and a bias of 2, all distinct per client. */
const stateOf = (c: number): ClientState => ({
  head: { shape: [2, 3], data: Float32Array.from({ length: 6 }, (_, i) => c + i / 7) },
  bias: { shape: [2], data: Float32Array.from([c * 0.1, -c]) },
});
const bytesPerState = 4 * 8;

/** Where the store spills: found through a spilled file's folder (the store names it itself). */
const spillFolder = (store: ClientStateStore): string | undefined => (store as unknown as { spillDir?: string }).spillDir;

describe("ClientStateStore", () => {
  it("keeps at most its budget in memory, spills the rest, and reads every state back exactly", () => {
    const store = new ClientStateStore(10 * bytesPerState);
    for (let c = 0; c < 100; c++) store.stage(c, stateOf(c));
    store.commit();
    expect(store.size).toBe(100);
    expect(store.spilledCount).toBe(90);
    expect(store.peakBytes).toBeLessThanOrEqual(11 * bytesPerState);
    for (let c = 99; c >= 0; c--) expect(store.get(c)).toEqual(stateOf(c));
    expect(store.peakBytes).toBeLessThanOrEqual(11 * bytesPerState);
    // The spill folder is the process's own (0700), its files the owner's only (0600), and gone once closed.
    const folder = spillFolder(store)!;
    expect(statSync(folder).mode & 0o777).toBe(0o700);
    const file = `${folder}/${readdirSync(folder)[0]}`;
    expect(statSync(file).mode & 0o777).toBe(0o600);
    store.close();
    expect(existsSync(dirname(file))).toBe(false);
  });

  it("counts a round's states only once it is committed; a discarded round leaves the old ones", () => {
    const store = new ClientStateStore(2 * bytesPerState);
    [1, 2, 3].forEach((c) => store.stage(c, stateOf(c)));
    expect(store.get(1)).toBeUndefined();
    store.commit();
    store.stage(1, stateOf(41));
    expect(store.get(1)).toEqual(stateOf(1));
    store.discard();
    store.commit();
    expect(store.get(1)).toEqual(stateOf(1));
    store.stage(3, stateOf(43));
    store.commit();
    expect([store.get(1), store.get(2), store.get(3)]).toEqual([stateOf(1), stateOf(2), stateOf(43)]);
    store.close();
  });

  it("stacks a cohort's states in its order, a client never seen from the initial state", () => {
    const store = new ClientStateStore(0);
    store.stage(7, stateOf(7));
    store.commit();
    const stacked = stackedStates(store, [9, 7], stateOf(0));
    expect(stacked.bias).toEqual({ shape: [2, 2], data: Float32Array.from([0, -0, 0.7, -7]) });
    expect(stacked.head!.shape).toEqual([2, 2, 3]);
    store.close();
  });

  it("round-trips through a checkpoint's companion file, client by client, spilled states included; a damaged file is FT304", async () => {
    const store = new ClientStateStore(3 * bytesPerState);
    for (const c of [5, 1, 30, 12, 8]) store.stage(c, stateOf(c));
    store.commit();
    expect(store.spilledCount).toBe(2);
    const dir = tempDir("ft-client-state-file-");
    const checkpoint = join(dir, "checkpoint-00000003.safetensors");
    const path = join(dir, clientStatesFileName("checkpoint-00000003.safetensors"));
    const ref = (await writeClientStates(path, store, 3))!;
    expect(ref).toMatchObject({ file: "checkpoint-00000003.clients.safetensors", clients: 5, bytes: statSync(path).size });
    expect(statSync(path).mode & 0o777).toBe(0o600);
    // A plain safetensors file: one tensor per client and state tensor, as PyTorch would list it.
    const file = decodeSafetensors(readFileSync(path));
    expect([...file.tensors.keys()]).toEqual(["1.bias", "1.head", "5.bias", "5.head", "8.bias", "8.head", "12.bias", "12.head", "30.bias", "30.head"]);
    expect(file.metadata).toMatchObject({ format: "fedtensor-client-states", round: "3" });
    const again = await readClientStates(checkpoint, ref, 0);
    expect(again.clients()).toEqual([1, 5, 8, 12, 30]);
    for (const c of [1, 5, 8, 12, 30]) expect(again.get(c)).toEqual(stateOf(c));
    again.close();
    store.close();
    const code = (error: unknown) => (error instanceof FedTensorError ? error.code : String(error));
    // One value changed (client 8's first head value), then the file cut short, then gone: each is FT304.
    const bytes = readFileSync(path);
    const flipped = Buffer.from(bytes);
    const at = flipped.length - 3 * bytesPerState + 4 * 2;
    flipped[at] = flipped[at]! ^ 1;
    writeFileSync(path, flipped);
    expect(code(await readClientStates(checkpoint, ref).catch((e: unknown) => e))).toBe("FT304");
    writeFileSync(path, bytes.subarray(0, bytes.length - 4));
    await expect(readClientStates(checkpoint, ref)).rejects.toThrow(/FT304: .*truncated/);
    rmSync(path);
    await expect(readClientStates(checkpoint, ref)).rejects.toThrow(/FT304: .*keeps its clients' states in this file, which cannot be read/);
  });

  it("goes with its checkpoint: written before it, named in it, pruned with it", async () => {
    const store = new ClientStateStore(0);
    store.stage(4, stateOf(4));
    store.commit();
    const dir = tempDir("ft-client-state-prune-");
    const checkpoint = (round: number) => ({ round, serverState: { params: { w: { shape: [1], data: Float32Array.of(round) } } }, rngState: {}, config: {} });
    for (const round of [1, 2]) await writeCheckpoint(dir, checkpoint(round), { keep: 1, clientStates: store });
    expect(readdirSync(dir).sort()).toEqual(["checkpoint-00000002.clients.safetensors", "checkpoint-00000002.safetensors"]);
    const path = join(dir, "checkpoint-00000002.safetensors");
    const loaded = await readCheckpoint(path);
    expect(loaded.serverState).not.toHaveProperty("clients");
    const again = await readClientStates(path, loaded.clientStates!);
    expect(again.get(4)).toEqual(stateOf(4));
    again.close();
    store.close();
    // No client keeps a state: no companion, and none is left from before.
    await writeCheckpoint(dir, checkpoint(3), { keep: 1, clientStates: new ClientStateStore() });
    expect(readdirSync(dir)).toEqual(["checkpoint-00000003.safetensors"]);
  });

  it("reads the states of a checkpoint of the first layout (inside its server state)", () => {
    const tree = { "5": stateOf(5), "1": stateOf(1) };
    const store = ClientStateStore.fromTree(tree as never, 0);
    expect(store.clients()).toEqual([1, 5]);
    expect(store.get(5)).toEqual(stateOf(5));
    store.close();
  });

  it("refuses states of another layout and checkpoint trees that are no clients' states (FT365)", () => {
    const store = new ClientStateStore();
    store.stage(0, stateOf(0));
    const code = (f: () => unknown) => {
      try {
        f();
      } catch (error) {
        return error instanceof FedTensorError ? error.code : String(error);
      }
      return "accepted";
    };
    expect(code(() => store.stage(1, { head: stateOf(1).head! }))).toBe("FT365");
    expect(code(() => store.stage(1, { ...stateOf(1), bias: { shape: [3], data: new Float32Array(2) } }))).toBe("FT365");
    expect(code(() => ClientStateStore.fromTree({ alice: stateOf(1) } as never))).toBe("FT365");
    expect(() => new ClientStateStore(-1)).toThrow(/FT365/);
    store.close();
  });
});
