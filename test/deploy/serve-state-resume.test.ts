/**
 * A served FedPer run whose server is killed with SIGKILL after round 1's checkpoint and
 * resumed with --resume: the client processes (each with its own --state-dir) reconnect, and
 * round 2 starts from the state each client wrote after round 1, which the resumed server never
 * had: the state file then holds that very state beside round 2's.
 * Needs `npm run build` (bin/ runs dist/).
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { FileStateStorage } from "../../src/deploy/client/state-file.js";
import { decodeStates } from "../../src/deploy/client/state.js";
import { checkpointFileName } from "../../src/lib/run/checkpoint.js";
import { readMetrics } from "../../src/lib/run/metrics.js";
import { deadline } from "../helpers/deadline.js";
import { serverUrl, smallServe, startProcess } from "./serve-helpers.js";
import { killedAfterAll, serveWithFiles } from "./serve-kill-helpers.js";

const { track } = killedAfterAll();

describe("fedtensor serve --algorithm fedper killed and resumed", () => {
  it("each client's round 2 starts from the state it kept after round 1", async () => {
    const options = ["--model", "logistic", "--algorithm", "fedper", "--rounds", "2", "--clients-per-round", "2", "--min-clients", "2"];
    const { out, tokens, files, server, url } = await serveWithFiles(track, "fedtensor-serve-state-resume-", 2, ...options);
    const stateDirs = files.map((file) => `${file}.state`);
    // Client 1 trains on one onnxruntime thread (--threads): the option's sessions train and keep state as the default's do.
    const clients = [0, 1].map((i) => track(startProcess(["client", "--server", url, "--token", tokens[i]!, "--data", files[i]!, "--state-dir", stateDirs[i]!, "--max-backoff", "1", ...(i === 1 ? ["--threads", "1"] : [])])));
    await server.waitFor(/round 1\/2: 2 of 2 clients merged/);
    // Killed as soon as round 1's checkpoint is there: round 2 is under way, not merged.
    const checkpoint = join(out, checkpointFileName(1));
    const until = Date.now() + deadline(30_000);
    while (!existsSync(checkpoint) && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 20));
    server.child.kill("SIGKILL");
    expect(existsSync(checkpoint)).toBe(true);
    expect(await server.exited()).toBeNull();
    expect(server.output()).not.toMatch(/round 2\/2/);

    // The server told the clients round 1 merged before it logged it; each writes its state when
    // told, in its own time: read the files once both say they kept it.
    await Promise.all(clients.map((client) => client.waitFor(/round 1: client state kept/, 30_000)));
    const stateFiles = [0, 1].map((i) => new FileStateStorage(stateDirs[i]!).describe("run", `client-00${i + 1}`));
    const afterRound1 = stateFiles.map((file) => decodeStates(readFileSync(file), file));
    for (const states of afterRound1) expect(states.map((s) => s.round)).toEqual([1]);

    const port = new URL(url).port;
    const args = smallServe(join(out, "..", "tokens.txt"), out, ...options).filter((a) => a !== "--overwrite").map((a) => (a === "0" ? port : a));
    const resumed = track(startProcess([...args, "--resume"]));
    await serverUrl(resumed);
    expect(await resumed.exited()).toBe(0);
    expect(resumed.output()).toMatch(/resumed from round 1/);
    expect(resumed.output()).toMatch(/round 2\/2: 2 of 2 clients merged/);
    expect(readMetrics(join(out, "metrics.jsonl")).map((r) => [r.round, r.clients])).toEqual([[1, 2], [2, 2]]);
    for (const [i, client] of clients.entries()) {
      expect(await client.exited()).toBe(0);
      expect(client.output()).toMatch(/round 2: starting from this client's state of round 1/);
      const states = decodeStates(readFileSync(stateFiles[i]!), stateFiles[i]!);
      expect(states.map((s) => s.round)).toEqual([1, 2]);
      // Round 1's state as the client wrote it before the kill, and round 2's trained from it.
      const before = afterRound1[i]![0]!.tensors.get("heads.b")!.data;
      expect(states[0]!.tensors.get("heads.b")!.data).toEqual(before);
      expect(states[1]!.tensors.get("heads.b")!.data).not.toEqual(before);
    }
  }, deadline(120_000));
});
