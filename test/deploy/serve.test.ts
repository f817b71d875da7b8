/**
 * `fedtensor serve` with `fedtensor client` processes on 127.0.0.1: FedAvg on the MNIST 2NN
 * reaches a sane accuracy; a client with a bad token, and connections that send malformed or
 * oversized messages, are refused and logged while the run goes on; the server killed with
 * SIGKILL and restarted with --resume continues from its checkpoint while the clients reconnect.
 * Needs `npm run build` (bin/ runs dist/).
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { WebSocket } from "ws";
import { encodeFrame } from "../../src/deploy/protocol/frame.js";
import { WIRE_VERSION } from "../../src/deploy/protocol/messages.js";
import { readMetrics } from "../../src/lib/run/metrics.js";
import { tempDir } from "../run/temp-dir.js";
import { serverUrl, smallServe, startClient, startProcess, writeTokens, type Process } from "./serve-helpers.js";
import { deadline } from "../helpers/deadline.js";

const started: Process[] = [];
afterAll(() => started.forEach((p) => p.child.exitCode === null && p.child.kill("SIGKILL")));
const track = (p: Process) => (started.push(p), p);

/** Opens a WebSocket to `url`, runs `act` on it once open, and resolves with the close code. */
function rawConnection(url: string, act: (socket: WebSocket) => void): Promise<number> {
  return new Promise((resolve) => {
    const socket = new WebSocket(url);
    socket.on("open", () => act(socket));
    socket.on("error", () => {});
    socket.on("close", (code) => resolve(code));
  });
}

describe("fedtensor serve with client processes", () => {
  it("trains FedAvg, refuses bad tokens and malformed messages, and resumes after kill -9 while clients reconnect", async () => {
    const dir = tempDir("fedtensor-serve-");
    const out = join(dir, "run");
    const { path, tokens } = writeTokens(dir, 3);
    const args = smallServe(path, out, "--rounds", "4", "--clients-per-round", "3", "--min-clients", "3");
    const first = track(startProcess(args));
    const url = await serverUrl(first);
    const port = new URL(url).port;
    const clients = [0, 1, 2].map((i) => track(startClient(url, tokens[i]!, i)));

    // Refused and logged; the client gives up (exit 1) rather than retrying a bad token.
    const intruder = track(startClient(url, "0123456789abcdef0123456789abcdef", 5));
    expect(await intruder.exited()).toBe(1);
    expect(intruder.output()).toMatch(/refused this client: invalid token/);
    // Malformed: a text frame, bytes that are no frame, a wrong wire version, an update before hello.
    const badFrames: (string | Uint8Array)[] = [
      "hello",
      Uint8Array.of(1, 2, 3),
      encodeFrame({ v: 99, type: "hello", token: tokens[0], agent: "node" }),
      encodeFrame({ v: WIRE_VERSION, type: "update", round: 1, task: "x" }),
    ];
    for (const frame of badFrames) expect(await rawConnection(url, (s) => s.send(frame))).toBe(1008);
    // Oversized: ws closes with 1009 before the message is buffered whole.
    expect(await rawConnection(url, (s) => s.send(new Uint8Array(64 * 1024 * 1024)))).toBe(1009);

    await first.waitFor(/round 2\/4: 3 of 3 clients merged/, 120_000);
    const log = first.output();
    expect(log).toMatch(/refused a client at .*: invalid token/);
    expect(log).toMatch(/refused a client at .*: a text frame/);
    expect(log).toMatch(/refused a client at .*: wire version 99/);
    expect(log).toMatch(/a message over the size limit/);
    first.child.kill("SIGKILL");
    await first.exited();

    const second = track(startProcess([...args.filter((a) => a !== "--overwrite").map((a) => (a === "0" ? port : a)), "--resume"]));
    // Killed after round 2's log line: its checkpoint may or may not have reached the disk.
    const resumedFrom = Number((await second.waitFor(/resumed from round (\d+)/))[1]);
    expect([1, 2]).toContain(resumedFrom);
    expect(await second.exited()).toBe(0);
    const resumedLog = second.output();
    expect(resumedLog).toMatch(/round 3\/4: 3 of 3 clients merged/);
    expect(resumedLog).toMatch(/round 4\/4: 3 of 3 clients merged/);
    for (const client of clients) expect(client.output()).toMatch(/reconnecting in/);

    const rows = readMetrics(join(out, "metrics.jsonl"));
    expect(rows.map((r) => r.round)).toEqual([1, 2, 3, 4]);
    expect(rows.every((r) => r.clients === 3)).toBe(true);
    const accuracy = rows.at(-1)!.test_accuracy as number;
    // Four rounds of three clients with 3,000 examples each: the 2NN is well past 90%.
    expect(accuracy).toBeGreaterThan(0.9);
    expect(readFileSync(join(out, "metrics.csv"), "utf8")).toMatch(/^round,/);
  }, deadline(240_000));
});
