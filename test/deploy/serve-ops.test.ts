/**
 * `fedtensor serve` as an operator runs it, with `fedtensor client` processes and hand-driven
 * connections on 127.0.0.1, in one run:
 * - a claim of 2147483647 examples (which crashed the server) and a second ready are refused
 *   (FT350) while the run goes on;
 * - a second process with a client's token is refused (FT351) and stops; the first keeps its place;
 * - /healthz, /status and /metrics answer with the admin token only (FT352 otherwise);
 * - the waiting line counts connected clients that are not ready yet;
 * - SIGHUP rereads the tokens file: a revoked client is told and disconnected, a file that
 *   does not read changes nothing (FT354);
 * - the run's log is in the run folder; at the end every client is told the run finished, and
 *   Node clients without --exit-when-done exit 0.
 * Needs `npm run build` (bin/ runs dist/).
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { encodeFrame } from "../../src/deploy/protocol/frame.js";
import { WIRE_VERSION } from "../../src/deploy/protocol/messages.js";
import { deadline } from "../helpers/deadline.js";
import { tempDir } from "../run/temp-dir.js";
import { rawClient } from "./raw-client.js";
import { serverUrl, smallServe, startProcess, writeTokens, type Process } from "./serve-helpers.js";
import { partitionFiles } from "./serve-kill-helpers.js";

const started: Process[] = [];
afterAll(() => started.forEach((p) => p.child.exitCode === null && p.child.kill("SIGKILL")));
const track = (p: Process) => (started.push(p), p);

const hello = (token: string) => encodeFrame({ v: WIRE_VERSION, type: "hello", token, agent: "node" });
const ready = (examples: number) => encodeFrame({ v: WIRE_VERSION, type: "ready", examples });

describe("operating fedtensor serve", () => {
  it("bounds claims, refuses a token in use, serves the admin endpoints, revokes on SIGHUP, logs to the run folder and tells clients the run finished", async () => {
    const dir = tempDir("fedtensor-serve-ops-");
    const out = join(dir, "run");
    const { path, tokens } = writeTokens(dir, 4);
    // Each client's examples from a record file (those --dataset mnist --client-index i reads): no client process reads MNIST.
    const files = partitionFiles(dir, 3);
    const adminToken = "0123456789abcdef0123456789abcdef";
    writeFileSync(join(dir, "admin.token"), `${adminToken}\n`);
    // --wait-notice 1: the "waiting for clients" line the test reads comes each second, not each 10 s.
    const server = track(startProcess([...smallServe(path, out, "--rounds", "5", "--clients-per-round", "3", "--min-clients", "2", "--round-timeout", "60", "--wait-notice", "1"), "--admin-token-file", join(dir, "admin.token")]));
    const url = await serverUrl(server);
    const http = url.replace(/^ws/, "http").replace(/\/fedtensor$/, "");
    const admin = (path: string, token?: string) => fetch(`${http}${path}`, token === undefined ? {} : { headers: { authorization: `Bearer ${token}` } });

    // The admin endpoints: only with the admin token.
    expect((await admin("/status")).status).toBe(401);
    expect((await admin("/metrics", "not-the-admin-token")).status).toBe(401);
    expect((await admin("/metrics", tokens[0])).status).toBe(401);
    expect(await (await admin("/healthz", adminToken)).json()).toEqual({ status: "ok" });
    await server.waitFor(/FT352: admin request \/metrics refused: wrong admin token/);

    // 2^31 - 1 examples: the server compiled a part for it and died (RangeError). Now FT350, and the client is told.
    const liar = rawClient(url);
    await liar.opened;
    liar.send(hello(tokens[3]!));
    await liar.next("welcome");
    liar.send(ready(2 ** 31 - 1));
    expect((await liar.next("refused")).reason).toMatch(/^FT350: client-004 claimed 2147483647 examples, outside the run's bound: at most 3000 \(--max-client-examples\)/);
    expect(await liar.closed).toBe(1008);
    // A second ready could change the cohort's scale mid-round: refused.
    const twice = rawClient(url);
    await twice.opened;
    twice.send(hello(tokens[3]!));
    await twice.next("welcome");
    twice.send(ready(100));
    twice.send(ready(3000));
    expect((await twice.next("refused")).reason).toMatch(/a second ready/);
    // Connected, not ready: the waiting line and /status count it.
    const lurker = rawClient(url);
    await lurker.opened;
    lurker.send(hello(tokens[3]!));
    await lurker.next("welcome");
    await server.waitFor(/round 1: waiting for clients \(1 connected, 0 of them ready/, deadline(30_000));
    const waiting = await (await admin("/status", adminToken)).json();
    expect(waiting).toMatchObject({ round: 1, step: "waiting for clients", connected: 1, ready: 0, clients: [{ id: "client-004", ready: false }], lastRound: null });

    // Revoke client-004: its line removed, SIGHUP; it is told and disconnected.
    writeFileSync(path, `${tokens.slice(0, 3).join("\n")}\n`);
    server.child.kill("SIGHUP");
    expect((await lurker.next("refused")).reason).toBe("this client's token was revoked (removed from the server's --client-tokens)");
    expect(await lurker.closed).toBe(1008);
    await server.waitFor(/SIGHUP: reloaded 3 tokens .*; revoked: client-004; added: none/);
    const revoked = rawClient(url);
    await revoked.opened;
    revoked.send(hello(tokens[3]!));
    expect((await revoked.next("refused")).reason).toBe("invalid token");
    // A file that does not read keeps the tokens in force (FT354), and the server runs on.
    writeFileSync(path, "short\n");
    server.child.kill("SIGHUP");
    await server.waitFor(/FT354: --client-tokens reload from .* failed, the previous tokens stay in force/);

    const fileClient = (i: number) => startProcess(["client", "--server", url, "--token", tokens[i]!, "--data", files[i]!, "--max-backoff", "1"]);
    const clients = [0, 1, 2].map((i) => track(fileClient(i)));
    await server.waitFor(/client-001 ready/, deadline(60_000));
    // Another process with client-001's token: refused while client-001 answers its ping, and told to stop.
    const second = track(fileClient(0));
    expect(await second.exited()).toBe(1);
    expect(second.output()).toMatch(/FT340: the server at .* refused this client: FT351: the token of client-001 is in use by a live connection from 127\.0\.0\.1:\d+/);
    expect(server.output()).toMatch(/refused a client at 127\.0\.0\.1:\d+: FT351: the token of client-001 is in use/);

    await server.waitFor(/round 1\/5: 3 of 3 clients merged/, deadline(120_000));
    // The run is held while the endpoints are asked: with client-001 stopped, the next round it
    // is in waits for its answer (--round-timeout 60), so the server cannot finish the run first.
    clients[0]!.child.kill("SIGSTOP");
    const [metricsResponse, statusResponse] = await Promise.all([admin("/metrics", adminToken), admin("/status", adminToken)]);
    clients[0]!.child.kill("SIGCONT");
    const metrics = await metricsResponse.text();
    expect(metrics).toMatch(/^fedtensor_rounds_finished_total\{outcome="merged"\} [1-3]$/m);
    expect(metrics).toMatch(/^fedtensor_clients_connected 3$/m);
    expect(metrics).toMatch(/^fedtensor_refused_connections_total\{reason="claim"\} 1$/m);
    expect(metrics).toMatch(/^fedtensor_refused_connections_total\{reason="in-use"\} 1$/m);
    expect(metrics).toMatch(/^fedtensor_refused_connections_total\{reason="revoked"\} 1$/m);
    expect(metrics).toMatch(/^fedtensor_last_round\{value="test_accuracy"\} 0\.\d+$/m);
    expect(metrics).toMatch(/^fedtensor_process_resident_memory_bytes \d+/m);
    const status = (await statusResponse.json()) as { lastRound: object; clients: { id: string }[] };
    expect(status.lastRound).toMatchObject({ merged: true, clients: 3, dropped: 0 });
    expect(status.clients.map((c) => c.id)).toEqual(["client-001", "client-002", "client-003"]);

    expect(await server.exited()).toBe(0);
    // Told the run finished, the clients stop with 0 (no --exit-when-done).
    for (const client of clients) {
      expect(await client.exited()).toBe(0);
      expect(client.output()).toMatch(/the server finished the run after 5 rounds; exiting/);
    }
    // No client was knocked off by the second process.
    expect(clients[0]!.output()).not.toMatch(/reconnecting/);
    const log = readFileSync(join(out, "serve.log"), "utf8");
    expect(log).toMatch(/^\d{4}-\d\d-\d\dT[\d:.]+Z serving fedavg/m);
    expect(log).toMatch(/FT350: client-004 claimed 2147483647 examples/);
    expect(log).toMatch(/round 5\/5: 3 of 3 clients merged/);
    expect(log).toMatch(/run finished after 5 rounds/);
    // Nothing secret in the log: no client token, no admin token.
    for (const token of [...tokens, adminToken]) expect(log).not.toContain(token);
  }, deadline(300_000));
});
