import { spawn } from "node:child_process";
import { readdirSync, readFileSync, truncateSync, watch, writeFileSync, type FSWatcher } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { FedTensorError } from "../../src/errors/error.js";
import {
  checkpointFileName,
  listCheckpoints,
  loadLatestCheckpoint,
  readCheckpoint,
  writeCheckpoint,
  type Checkpoint,
} from "../../src/lib/run/checkpoint.js";
import { loadRunConfig, validateRunConfig } from "../../src/lib/run/config.js";
import { tempDir } from "./temp-dir.js";
import { transpileForNode } from "./transpile.js";

const checkpointDir = (): string => tempDir("ft-checkpoint-");

function checkpointOf(round: number): Checkpoint {
  return {
    round,
    serverState: {
      dense: { kernel: { shape: [2, 3], data: Float32Array.from([1, -2, 3.5, 0, 1e-8, round]) }, bias: { shape: [3], data: new Float32Array(3).fill(0.25) } },
      layers: [{ shape: [], data: Float32Array.from([Math.PI]) }],
    },
    rngState: { s: [round, 7, 11, 13], spare: null },
    config: { rounds: 20, algorithm: "fedavg", lr: 0.1 },
  };
}

async function loadError(path: string): Promise<FedTensorError> {
  const error = await readCheckpoint(path).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(FedTensorError);
  expect((error as FedTensorError).code).toBe("FT304");
  expect((error as FedTensorError).params.path).toBe(path);
  return error as FedTensorError;
}

describe("checkpoint files", () => {
  it("round-trips the state tree, RNG state and config exactly", async () => {
    const dir = checkpointDir();
    const path = await writeCheckpoint(dir, checkpointOf(4), { keep: 3 });
    expect(path).toBe(join(dir, "checkpoint-00000004.safetensors"));
    const loaded = await readCheckpoint(path);
    expect(loaded).toEqual(checkpointOf(4));
    const kernel = (loaded.serverState as unknown as { dense: { kernel: { data: Float32Array } } }).dense.kernel.data;
    expect(kernel).toBeInstanceOf(Float32Array);
    expect([...kernel]).toEqual([...Float32Array.from([1, -2, 3.5, 0, 1e-8, 4])]);
  });

  it("stores a run config that validates back to itself on resume", async () => {
    const config = await loadRunConfig(["--algorithm", "fedprox", "--rounds", "8"]);
    const path = await writeCheckpoint(checkpointDir(), { ...checkpointOf(1), config }, { keep: 1 });
    const stored = (await readCheckpoint(path)).config as Record<string, unknown>;
    expect(validateRunConfig(stored, path)).toEqual(config);
  });

  it("stores tensors as binary float32 in a safetensors file keyed by tree path", async () => {
    const values = new Float32Array(1000).fill(0.1);
    const path = await writeCheckpoint(checkpointDir(), { round: 1, serverState: { w: { shape: [1000], data: values } }, rngState: 0, config: {} }, { keep: 1 });
    const bytes = readFileSync(path);
    const headerLength = Number(bytes.readBigUInt64LE(0));
    const header = JSON.parse(bytes.subarray(8, 8 + headerLength).toString("utf8"));
    expect(header.w).toEqual({ dtype: "F32", shape: [1000], data_offsets: [0, 4000] });
    expect(bytes.length).toBe(8 + headerLength + 4000);
    expect(header.__metadata__).toMatchObject({ format: "fedtensor-checkpoint", format_version: "1", round: "1", rng_state: "0", config: "{}" });
    expect(header.__metadata__.sha256).toMatch(/^[0-9a-f]{64}$/);
  });

  it("names tensors by their tree path, array indices dotted, and keeps empty subtrees", async () => {
    const state = { params: { layers: [{ w: { shape: [1], data: Float32Array.from([1]) } }] }, server: {}, clients: { "7": { w: { shape: [1], data: Float32Array.from([2]) } } } };
    const path = await writeCheckpoint(checkpointDir(), { round: 1, serverState: state, rngState: null, config: null }, { keep: 1 });
    const bytes = readFileSync(path);
    const header = JSON.parse(bytes.subarray(8, 8 + Number(bytes.readBigUInt64LE(0))).toString("utf8"));
    expect(Object.keys(header).filter((k) => k !== "__metadata__").sort()).toEqual(["clients.7.w", "params.layers.0.w"]);
    expect((await readCheckpoint(path)).serverState).toEqual(state);
  });

  it("still loads a checkpoint written by the first (FTCKPT01) writer", async () => {
    const fixture = join(import.meta.dirname, "../fixtures/checkpoints/checkpoint-00000003.ftckpt");
    expect(readFileSync(fixture).subarray(0, 8).toString("latin1")).toBe("FTCKPT01");
    const loaded = await readCheckpoint(fixture);
    expect(loaded).toEqual({
      round: 3,
      serverState: {
        params: { w: { shape: [2, 3], data: Float32Array.from([1, -2, 3.5, 0, 1e-8, 3]) }, b: { shape: [3], data: new Float32Array(3).fill(0.25) } },
        server: {},
        clients: { "4": { w: { shape: [1], data: Float32Array.from([Math.PI]) } } },
      },
      rngState: { seed: 7 },
      config: { rounds: 10, algorithm: "fedavg", lr: 0.1 },
    });
    // In a run folder it is listed and resumed from; the next checkpoint is a safetensors file.
    const dir = checkpointDir();
    writeFileSync(join(dir, "checkpoint-00000003.ftckpt"), readFileSync(fixture));
    expect((await loadLatestCheckpoint(dir))?.checkpoint.round).toBe(3);
    await writeCheckpoint(dir, { ...loaded, round: 4 }, { keep: 2 });
    expect(readdirSync(dir).sort()).toEqual(["checkpoint-00000003.ftckpt", checkpointFileName(4)]);
    expect((await loadLatestCheckpoint(dir))?.checkpoint.round).toBe(4);
  });

  it("refuses a tree whose two leaves would get one tensor name", async () => {
    const state = { a: [{ shape: [1], data: new Float32Array(1) }], "a.0": { shape: [1], data: new Float32Array(1) } };
    await expect(writeCheckpoint(checkpointDir(), { round: 1, serverState: state, rngState: null, config: null }, { keep: 1 })).rejects.toThrow(
      "FT302: server state: two leaves would both be stored as tensor a.0",
    );
  });

  it("rejects a tensor whose data does not fill its shape", async () => {
    const bad = { round: 1, serverState: { a: { b: { shape: [2, 2], data: new Float32Array(3) } } }, rngState: null, config: null };
    await expect(writeCheckpoint(checkpointDir(), bad, { keep: 1 })).rejects.toThrow(
      "FT302: server state at a.b: shape [2,2] holds 4 values but its data has 3",
    );
  });

  it("refuses a round that could not name a checkpoint file", async () => {
    await expect(writeCheckpoint(checkpointDir(), checkpointOf(-1), { keep: 1 })).rejects.toThrow(
      "a checkpoint's round must be an integer >= 0, got -1",
    );
  });

  it("keeps the newest N and drops superseded later rounds and stale temp files", async () => {
    const dir = checkpointDir();
    for (let round = 1; round <= 5; round++) await writeCheckpoint(dir, checkpointOf(round), { keep: 2 });
    expect((await listCheckpoints(dir)).map((c) => c.round)).toEqual([4, 5]);
    writeFileSync(join(dir, `.${checkpointFileName(6)}.tmp-999-1`), "half a checkpoint");
    // A run resumed from round 2 writes round 3: rounds 4 and 5 of the run it resumed are superseded.
    await writeCheckpoint(dir, checkpointOf(3), { keep: 2 });
    expect(readdirSync(dir).sort()).toEqual([checkpointFileName(3)]);
  });
});

describe("corrupt checkpoints", () => {
  async function writtenCheckpoint(): Promise<{ path: string; size: number }> {
    const path = await writeCheckpoint(checkpointDir(), checkpointOf(2), { keep: 1 });
    return { path, size: readFileSync(path).length };
  }

  it("detects a file truncated mid-write at any length", async () => {
    const { path, size } = await writtenCheckpoint();
    for (const length of [size - 1, size - 4, size - 20]) {
      truncateSync(path, length);
      expect((await loadError(path)).params.why).toMatch(new RegExp(`^not a readable safetensors checkpoint \\(${length} bytes\\): tensor "[a-z0-9.]+": data_offsets \\[\\d+, \\d+\\] lie outside the \\d+ data bytes$`));
    }
    truncateSync(path, 20);
    expect((await loadError(path)).params.why).toMatch(/^not a readable safetensors checkpoint \(20 bytes\): truncated: the header needs \d+ bytes, the file has 20$/);
    truncateSync(path, 5);
    expect((await loadError(path)).params.why).toBe("not a readable safetensors checkpoint (5 bytes): truncated: 5 bytes end before the header length");
  });

  it("detects changed bytes through the checksum", async () => {
    const { path, size } = await writtenCheckpoint();
    const bytes = readFileSync(path);
    for (const at of [size - 1, size - 17]) {
      const flipped = Buffer.from(bytes);
      flipped.writeUInt8(bytes.readUInt8(at) ^ 0x01, at);
      writeFileSync(path, flipped);
      expect((await loadError(path)).params.why).toBe("SHA-256 checksum mismatch: the contents are damaged");
    }
    // A changed digit of the round in the header: still valid JSON, but not what was written.
    const text = bytes.toString("latin1").replace('"round":"2"', '"round":"7"');
    writeFileSync(path, Buffer.from(text, "latin1"));
    expect((await loadError(path)).params.why).toBe("SHA-256 checksum mismatch: the contents are damaged");
    writeFileSync(path, Buffer.concat([bytes, Buffer.from([0])]));
    expect((await loadError(path)).params.why).toMatch(/the tensors cover \d+ of the \d+ data bytes$/);
  });

  it("loads the newest checkpoint that verifies and names the ones skipped", async () => {
    const dir = checkpointDir();
    for (const round of [1, 2, 3]) await writeCheckpoint(dir, checkpointOf(round), { keep: 3 });
    const newest = join(dir, checkpointFileName(3));
    truncateSync(newest, 100);
    const loaded = await loadLatestCheckpoint(dir);
    expect(loaded?.checkpoint.round).toBe(2);
    expect(loaded?.skipped).toEqual([{ path: newest, why: expect.stringMatching(`^FT304: ${newest}: not a readable safetensors checkpoint \\(100 bytes\\): truncated`) }]);
  });

  it("throws the newest one's FT304 when none verifies, and finds nothing in an empty or missing folder", async () => {
    const dir = checkpointDir();
    await writeCheckpoint(dir, checkpointOf(1), { keep: 3 });
    expect(await loadLatestCheckpoint(join(dir, "missing"))).toBeUndefined();
    writeFileSync(join(dir, checkpointFileName(2)), "not a checkpoint at all, but long enough to have a header");
    truncateSync(join(dir, checkpointFileName(1)), 64);
    await expect(loadLatestCheckpoint(dir)).rejects.toThrow(`FT304: ${join(dir, checkpointFileName(2))}: not a readable safetensors checkpoint`);
    expect(await loadLatestCheckpoint(checkpointDir())).toBeUndefined();
  });
});

describe("a writer killed with SIGKILL", () => {
  /**
   * Starts the writer child, waits for `rounds` more checkpoints, then kills it as soon as the
   * next one's temp file appears (inotify, through fs.watch): mid-write, on a loaded machine
   * as on an idle one, rather than after a random delay that a slow write may outlast.
   */
  function runAndKill(script: string, dir: string, rounds: number): Promise<number> {
    return new Promise((resolvePromise, reject) => {
      const child = spawn(process.execPath, [script, dir], { stdio: ["ignore", "pipe", "pipe"] });
      let lastReported = 0;
      let reports = 0;
      let stderr = "";
      let watcher: FSWatcher | undefined;
      child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
      child.stdout.on("data", (chunk: Buffer) => {
        for (const [, round] of chunk.toString().matchAll(/wrote (\d+)/g)) {
          lastReported = Number(round);
          if (++reports === rounds) {
            watcher = watch(dir, (_event, name) => {
              if (name?.includes(".tmp-")) child.kill("SIGKILL");
            });
          }
        }
      });
      child.on("close", (code, signal) => {
        watcher?.close();
        if (signal === "SIGKILL") resolvePromise(lastReported);
        else reject(new Error(`writer exited with ${code}: ${stderr}`));
      });
    });
  }

  it("never leaves a corrupt latest checkpoint", async () => {
    const script = transpileForNode(join(import.meta.dirname, "checkpoint-writer.ts"), checkpointDir());
    const dir = checkpointDir();
    let tempFilesLeft = 0;
    // At least 3 kills, and more until one lands mid-write (nearly each does: it follows the temp file's creation).
    for (let kill = 0; kill < 3 || (tempFilesLeft === 0 && kill < 12); kill++) {
      const reported = await runAndKill(script, dir, 2);
      tempFilesLeft += readdirSync(dir).filter((name) => name.includes(".tmp-")).length;
      const latest = await loadLatestCheckpoint(dir);
      expect(latest?.skipped).toEqual([]);
      const { round, serverState, rngState } = latest!.checkpoint;
      // The kill may land after a rename but before the round was reported.
      expect([reported, reported + 1]).toContain(round);
      expect(rngState).toEqual({ round });
      const data = (serverState as { layer: { w: { shape: number[]; data: Float32Array } } }).layer.w;
      expect(data.shape).toEqual([262_144, 4]);
      expect(data.data.every((value) => value === round)).toBe(true);
    }
    // Evidence that some kills landed mid-write, so the test exercised the torn-write case.
    expect(tempFilesLeft).toBeGreaterThan(0);
  });
});
