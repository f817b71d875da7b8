/**
 * bench/secagg-protocol: what the real SecAgg+ protocol (src/deploy/secagg) costs, in one
 * process with the transport left out (every message still goes through the wire format,
 * JSON with base64 keys and shares and the masked words raw after it, and the server's parsing):
 *
 * 1. Bytes a client sends per round, by step, and what it receives; the expansion factor:
 *    bytes sent over the vector's size in the clear (4 bytes a float32 coordinate), measured
 *    (the wire format) and for the same messages all in binary (keys 32 B, sealed share pair
 *    12 + 82 B, share 33 B, masked word 4 B), beside Bonawitz et al.'s reported 1.73x (2^10 users,
 *    2^20-dimensional vectors) and 1.98x (2^14 users, 2^24 dimensions) for 16-bit inputs, where
 *    most of the expansion is the wider masked word (16 + log2 n bits and more against 16).
 * 2. Protocol time per round for n clients (default 10, 20, 50), wall and CPU (all clients and
 *    the server run in this one process, one after the other: the CPU time is what the round's
 *    parties spend together), with no dropout and with 30% of the clients dropping after their
 *    masked input (recovered from neighbours' shares). The critical path is what a round would
 *    take with each client on its own machine and no network: the server's CPU plus, per
 *    step, the slowest client's.
 * 3. CPU time of each client's protocol work (keys, shares, quantization, masks, encoding), per
 *    step, from process.cpuUsage: CPU, not wall, so other work on the machine counts less.
 *
 * 4. What hardening against a lying server costs, against Flower's four SecAgg+ stages (setup,
 *    share_keys, collect_masked_vectors, unmask: the Stage enum of Flower's
 *    secaggplus_constants.py, one server message and one client reply each, counted from its
 *    SecAggPlusWorkflow): every message of the round re-encoded as that protocol would send it
 *    (keys without identity key or signature, each client told only its neighbours' keys, no
 *    consistency check, the unmask request naming the neighbours that survived and dropped),
 *    then with the consistency check alone added. Bytes sent and received per client, and round
 *    trips per round (4, then 5). Flower's collect stage also carries the training instructions;
 *    `fedtensor serve` sends the task before the secure sum, one round trip more in both.
 *
 * 5. Key reuse across rounds (--key-rounds K, default 4; src/deploy/secagg/reuse.ts): K rounds
 *    of one cohort with SecAggRounds clients, the first a full setup (pre-sharing K self-mask
 *    seeds) and the others reusing it: bytes sent and received and round trips per client in
 *    round 1 and in each round after it, against Flower's four stages every round (item 4).
 *
 * 6. The two functions that run on OpenSSL where Node has it (src/deploy/secagg/openssl.ts),
 *    against @noble's JavaScript that browser tabs run, timed alternately in this process: X25519
 *    as a client uses it (one secret key with each of 8 neighbours' public keys) and one mask's
 *    ChaCha20 keystream of --length words.
 *
 * usage: node dist/bench/secagg-protocol.js [--length 199210] [--clients 10,20,50] [--rounds 3] [--key-rounds 4]
 * (199,210: the 2NN's parameter count.) num_shares follows defaultNumShares (2 ceil(log2 n) + 1)
 * without dropouts and numSharesForDropouts (2 x 0.3n + 1, a guarantee) with them;
 * reconstruction_threshold is the smallest majority; Flower's default ranges.
 */
import { parseArgs } from "node:util";
import {
  type ClientMessage,
  type ReusedKeys,
  type SecAggParams,
  type ServerMessage,
  SecAggRounds,
  SECAGG_DEFAULTS,
  SecAggClient,
  SecAggServer,
  defaultNumShares,
  encodeMessage,
  majorityThreshold,
  numSharesForDropouts,
  messageSizeLimit,
  parseServerMessage,
  SETUP_SIZE_LIMIT,
} from "../src/deploy/secagg/index.js";
import { publicGraph } from "../src/deploy/secagg/graph.js";
import { openSsl, openSslX25519 } from "../src/deploy/secagg/openssl.js";
import { keystream } from "../src/deploy/secagg/random.js";
import { x25519 as nobleX25519 } from "@noble/curves/ed25519.js";
import { median } from "./stats.js";

const { values } = parseArgs({
  options: { length: { type: "string", default: "199210" }, clients: { type: "string", default: "10,20,50" }, rounds: { type: "string", default: "3" }, "key-rounds": { type: "string", default: "4" } },
});
const keyRounds = Number(values["key-rounds"]);
const length = Number(values.length);
const cohorts = values.clients.split(",").map(Number);
const rounds = Number(values.rounds);

type Step = "advertise-keys" | "share-keys" | "masked-input" | "consistency-check" | "unmask";
const STEPS: readonly Step[] = ["advertise-keys", "share-keys", "masked-input", "consistency-check", "unmask"];

interface Measured {
  seconds: number;
  /** CPU seconds of the whole round, clients and server (one process). */
  cpuSeconds: number;
  /** Per client: bytes sent by step, bytes received, CPU microseconds by step. */
  sent: Map<string, Record<Step, number>>;
  receivedBytes: Map<string, number>;
  /** The same, with the messages re-encoded as Flower's four stages send them (`flowerShape`), and with the consistency check alone added. */
  sentFlower: Map<string, number>;
  receivedFlower: Map<string, number>;
  sentChecked: Map<string, number>;
  receivedChecked: Map<string, number>;
  cpu: Map<string, Record<Step, number>>;
  included: number;
}

const cpuMicros = (): number => {
  const u = process.cpuUsage();
  return u.user + u.system;
};

async function round(n: number, dropFraction: number, roundId: number): Promise<Measured> {
  const ids = Array.from({ length: n }, (_, i) => `c${i}`);
  const dropouts = Math.round(dropFraction * n);
  const shares = numSharesForDropouts(n, dropouts);
  const params: SecAggParams = {
    ...SECAGG_DEFAULTS,
    round: roundId,
    vector_length: length,
    num_shares: shares,
    reconstruction_threshold: majorityThreshold(shares),
  };
  const vectors = new Map(ids.map((id) => [id, Float32Array.from({ length }, () => Math.random() * 2 - 1)]));
  const dropping = new Set(ids.slice(0, dropouts));
  const zero = (): Record<Step, number> => ({ "advertise-keys": 0, "share-keys": 0, "masked-input": 0, "consistency-check": 0, unmask: 0 });
  const sent = new Map(ids.map((id) => [id, zero()]));
  const cpu = new Map(ids.map((id) => [id, zero()]));
  const receivedBytes = new Map(ids.map((id) => [id, 0]));
  const [sentFlower, receivedFlower, sentChecked, receivedChecked] = [0, 1, 2, 3].map(() => new Map(ids.map((id) => [id, 0])));
  /** Each client's neighbours (from the graph the key list gives) and the survivor set, for the Flower-shaped messages. */
  let graph: ReadonlyMap<string, ReadonlySet<string>> = new Map();
  let survivors = new Set<string>();
  const shaped = (message: ClientMessage | ServerMessage, id: string) => {
    const flower = flowerShape(message, graph.get(id) ?? new Set(), survivors);
    add(sentOrReceived(message) === "sent" ? sentFlower! : receivedFlower!, id, flower === null ? 0 : encodeMessage(flower as never).length);
    const checked = message.step === "consistency-check" ? message : flower;
    add(sentOrReceived(message) === "sent" ? sentChecked! : receivedChecked!, id, checked === null ? 0 : encodeMessage(checked as never).length);
  };
  const add = (into: Map<string, number>, id: string, bytes: number) => into.set(id, into.get(id)! + bytes);
  const start = performance.now();
  const startCpu = cpuMicros();
  const server = new SecAggServer(params, ids);
  const clients = new Map<string, SecAggClient>();

  const answer = async (id: string, step: Step, make: () => ClientMessage | Promise<ClientMessage>) => {
    const before = cpuMicros();
    const message = await make();
    const raw = encodeMessage(message);
    cpu.get(id)![step] += cpuMicros() - before;
    sent.get(id)![step] += raw.length;
    shaped(message, id);
    const verdict = server.receive(id, raw);
    if (!verdict.accepted) throw new Error(verdict.reason);
  };

  for (const [id, setup] of server.start()) {
    const raw = encodeMessage(setup);
    receivedBytes.set(id, receivedBytes.get(id)! + raw.length);
    shaped(setup, id);
    const client = SecAggClient.fromSetup(raw);
    clients.set(id, client);
    await answer(id, "advertise-keys", () => client.advertiseKeys());
  }
  for (;;) {
    const outcome = await server.advance();
    if (outcome.kind === "aborted") throw new Error(outcome.reason);
    if (outcome.kind === "done")
      return { seconds: (performance.now() - start) / 1000, cpuSeconds: (cpuMicros() - startCpu) / 1e6, sent, receivedBytes, sentFlower: sentFlower!, receivedFlower: receivedFlower!, sentChecked: sentChecked!, receivedChecked: receivedChecked!, cpu, included: outcome.result.clients };
    const first = [...outcome.messages.values()][0];
    if (first?.step === "share-keys") graph = publicGraph(first.roster.map((e) => e.id), Math.min(server.params.num_shares - 1, first.roster.length - 1), first.graph_seed);
    if (first?.step === "consistency-check") survivors = new Set(first.survivors);
    for (const [id, message] of outcome.messages) {
      if (outcome.step === "consistency-check" && dropping.has(id)) continue;
      const raw = encodeMessage(message);
      receivedBytes.set(id, receivedBytes.get(id)! + raw.length);
      shaped(message, id);
      const client = clients.get(id)!;
      const parsed = parseServerMessage(raw, Math.max(SETUP_SIZE_LIMIT, messageSizeLimit(client.params)));
      if (!parsed.ok) throw new Error(parsed.reason);
      const request = parsed.message;
      if (request.step === "share-keys") await answer(id, "share-keys", () => client.shareKeys(request));
      else if (request.step === "masked-input") await answer(id, "masked-input", () => client.maskedInput(request, vectors.get(id)!));
      else if (request.step === "consistency-check") await answer(id, "consistency-check", () => client.consistencyCheck(request));
      else if (request.step === "unmask") await answer(id, "unmask", () => client.unmask(request));
    }
  }
}

/** Per client (mean): bytes sent, bytes received and round trips, in each of `keyRounds` rounds of one cohort whose first round's key setup serves them all. */
async function reusedRounds(n: number): Promise<{ sent: number; received: number; trips: number; reused: boolean }[]> {
  const ids = Array.from({ length: n }, (_, i) => `c${i}`);
  const shares = Math.min(n, defaultNumShares(n));
  const clients = new Map(ids.map((id) => [id, new SecAggRounds()]));
  const out: { sent: number; received: number; trips: number; reused: boolean }[] = [];
  let reuse: ReusedKeys | undefined;
  for (let r = 1; r <= keyRounds; r++) {
    const params: SecAggParams = { ...SECAGG_DEFAULTS, round: r, vector_length: length, num_shares: shares, reconstruction_threshold: majorityThreshold(shares), key_rounds: keyRounds };
    const server = new SecAggServer(params, ids, reuse === undefined ? {} : { reuse });
    const vectors = new Map(ids.map((id) => [id, Float32Array.from({ length }, () => Math.random() * 2 - 1)]));
    const tally = { sent: 0, received: 0, trips: 0, reused: reuse !== undefined };
    let requests: ReadonlyMap<string, ServerMessage> = server.start();
    for (;;) {
      for (const [id, message] of requests) {
        const raw = encodeMessage(message);
        const answer = encodeMessage(await clients.get(id)!.respond(r, raw, () => vectors.get(id)!));
        tally.received += raw.length / n;
        tally.sent += answer.length / n;
        tally.trips += 1 / n;
        const verdict = server.receive(id, answer);
        if (!verdict.accepted) throw new Error(verdict.reason);
      }
      const outcome = await server.advance();
      if (outcome.kind === "aborted") throw new Error(outcome.reason);
      if (outcome.kind === "done") break;
      requests = outcome.messages;
    }
    reuse = server.reusable();
    out.push(tally);
  }
  return out;
}

const sentOrReceived = (message: ClientMessage | ServerMessage): "sent" | "received" => ("from" in message ? "sent" : "received");

/**
 * A message as Flower's four stages would carry it (null: no such message): keys unsigned, each
 * client told its neighbours' keys only, no consistency check, the unmask request naming the
 * neighbours that survived and dropped.
 */
function flowerShape(message: ClientMessage | ServerMessage, neighbours: ReadonlySet<string>, survivors: ReadonlySet<string>): object | null {
  switch (message.step) {
    case "advertise-keys": {
      if (!("from" in message)) return message;
      const { identity_key: _key, signature: _signature, ...rest } = message as Extract<ClientMessage, { step: "advertise-keys" }>;
      return rest;
    }
    case "share-keys": {
      if ("from" in message) return message;
      const { roster, graph_seed: _seed, ...rest } = message as Extract<ServerMessage, { step: "share-keys" }>;
      return { ...rest, neighbours: roster.filter((e) => neighbours.has(e.id)).map(({ identity_key: _k, signature: _s, ...keys }) => keys) };
    }
    case "consistency-check":
      return null;
    case "unmask": {
      if ("from" in message) return message;
      const { signatures: _signatures, ...rest } = message as Extract<ServerMessage, { step: "unmask" }>;
      return { ...rest, survivors: [...neighbours].filter((id) => survivors.has(id)), dropped: [...neighbours].filter((id) => !survivors.has(id)) };
    }
    default:
      return message;
  }
}

const mean = (xs: readonly number[]): number => xs.reduce((a, b) => a + b, 0) / xs.length;
const kib = (bytes: number): string => `${(bytes / 1024).toFixed(1)} KiB`;

console.log(`SecAgg+ protocol, vector of ${length} float32 (${kib(4 * length)} in the clear), Flower's default ranges (M = 2^32)`);
for (const n of cohorts) {
  const numShares = Math.min(n, defaultNumShares(n));
  const full: Measured[] = [];
  const dropped: Measured[] = [];
  for (let r = 0; r < rounds; r++) {
    full.push(await round(n, 0, 2 * r));
    dropped.push(await round(n, 0.3, 2 * r + 1));
  }
  const last = full.at(-1)!;
  const perStep = Object.fromEntries(STEPS.map((s) => [s, mean([...last.sent.values()].map((b) => b[s]))])) as Record<Step, number>;
  const total = STEPS.reduce((a, s) => a + perStep[s], 0);
  const k = numShares - 1;
  // The same messages in binary: 2 keys; commitment + k (nonce + sealed pair + tag); L words; the unmask shares (k + 1 at most).
  const binary = 2 * 32 + (32 + k * (12 + 66 + 16)) + 4 * length + (k + 1) * 33;
  const cpuPerStep = Object.fromEntries(STEPS.map((s) => [s, median(full.flatMap((m) => [...m.cpu.values()].map((c) => c[s] / 1000)))])) as Record<Step, number>;
  const dropShares = numSharesForDropouts(n, Math.round(0.3 * n));
  console.log(`\nn = ${n}: num_shares ${numShares} (${k} neighbours), threshold ${majorityThreshold(numShares)}; with 30% dropouts num_shares ${dropShares}, threshold ${majorityThreshold(dropShares)}`);
  console.log(`  bytes sent per client: ${STEPS.map((s) => `${s} ${kib(perStep[s])}`).join(", ")}; total ${kib(total)}`);
  console.log(`  bytes received per client: ${kib(mean([...last.receivedBytes.values()]))}`);
  console.log(`  expansion over the vector in the clear: measured x${(total / (4 * length)).toFixed(3)} (wire format), all binary x${(binary / (4 * length)).toFixed(3)}`);
  // The server's share of the CPU: the round's, less what the clients' calls took.
  const serverCpu = (m: Measured) => m.cpuSeconds - [...m.cpu.values()].reduce((a, c) => a + STEPS.reduce((b, s) => b + c[s], 0), 0) / 1e6;
  // With the clients on their own machines, a step takes its slowest client: the critical path, network left out.
  const criticalPath = (m: Measured) => serverCpu(m) + STEPS.reduce((a, s) => a + Math.max(...[...m.cpu.values()].map((c) => c[s])), 0) / 1e6;
  const timing = (ms: Measured[]) =>
    `${median(ms.map((m) => m.seconds)).toFixed(2)} s wall, ${median(ms.map((m) => m.cpuSeconds)).toFixed(2)} s CPU ` +
    `(server ${median(ms.map(serverCpu)).toFixed(2)} s; critical path with parallel clients ${median(ms.map(criticalPath)).toFixed(2)} s)`;
  console.log(`  protocol time per round (all ${n} clients and the server in this process): ${timing(full)}; with 30% dropping after masked input: ${timing(dropped)} (${dropped[0]!.included} clients in the sum)`);
  console.log(`  client CPU per round (median): ${STEPS.map((s) => `${s} ${cpuPerStep[s].toFixed(1)} ms`).join(", ")}`);
  const perClient = (bytes: Map<string, number>) => kib(mean([...bytes.values()]));
  const sentTotal = (m: Measured) => new Map([...m.sent].map(([id, b]) => [id, STEPS.reduce((a, s) => a + b[s], 0)]));
  console.log(`  per client per round, sent / received / round trips (n = ${n}, no dropout):`);
  console.log(`    Flower's four stages (unsigned keys, neighbours' keys only, no check): ${perClient(last.sentFlower)} / ${perClient(last.receivedFlower)} / 4`);
  console.log(`    + the consistency check:                                              ${perClient(last.sentChecked)} / ${perClient(last.receivedChecked)} / 5`);
  console.log(`    + signed keys and the signed key list (public-randomness graph): this protocol ${perClient(sentTotal(last))} / ${perClient(last.receivedBytes)} / 5`);
  const window = await reusedRounds(n);
  const after = window.slice(1);
  // Besides the masked vector (4 bytes a word, the same in every protocol): what the key setup and the checks cost.
  const line = (t: { sent: number; received: number; trips: number }) => `${kib(t.sent)} (${kib(t.sent - 4 * length)} besides the masked vector) / ${kib(t.received)} / ${t.trips.toFixed(0)}`;
  console.log(`  key reuse (key_rounds ${keyRounds}), per client, sent / received / round trips: round 1 (full setup, ${keyRounds} seeds pre-shared) ${line(window[0]!)}; each later round (reused: ${after.every((t) => t.reused)}) ${after.length === 0 ? "none" : line({ sent: mean(after.map((t) => t.sent)), received: mean(after.map((t) => t.received)), trips: mean(after.map((t) => t.trips)) })}`);
  const overWindow = (pick: (t: { sent: number; received: number; trips: number }) => number) => mean(window.map(pick));
  console.log(`    mean over the ${keyRounds} rounds: ${kib(overWindow((t) => t.sent))} / ${kib(overWindow((t) => t.received))} / ${overWindow((t) => t.trips).toFixed(2)}, against Flower's ${perClient(last.sentFlower)} (${kib(mean([...last.sentFlower.values()]) - 4 * length)} besides the masked vector) / ${perClient(last.receivedFlower)} / 4 every round`);
}

/** Seconds per call of `work`, the median of `rounds` timings of `calls` calls each. */
function perCall(work: () => void, calls: number): number {
  return median(Array.from({ length: Math.max(rounds, 3) }, () => {
    const start = performance.now();
    for (let i = 0; i < calls; i++) work();
    return (performance.now() - start) / 1000 / calls;
  }));
}
if (openSsl === undefined) {
  console.log("OpenSSL against @noble: this Node has no process.getBuiltinModule, so SecAgg+ runs on @noble here");
} else {
  const native = openSslX25519(openSsl);
  const neighbours = Array.from({ length: 8 }, () => nobleX25519.getPublicKey(globalThis.crypto.getRandomValues(new Uint8Array(32))));
  // A fresh secret key each time, used with every neighbour: what a client's setup round does with each of its two keys.
  const agreement = (impl: { getPublicKey(s: Uint8Array): Uint8Array; getSharedSecret(s: Uint8Array, p: Uint8Array): Uint8Array }) => () => {
    const secret = globalThis.crypto.getRandomValues(new Uint8Array(32));
    impl.getPublicKey(secret);
    for (const p of neighbours) impl.getSharedSecret(secret, p);
  };
  const seed = globalThis.crypto.getRandomValues(new Uint8Array(32));
  const timings = { x25519: { openssl: 0, noble: 0 }, keystream: { openssl: 0, noble: 0 } };
  for (let pass = 0; pass < 2; pass++) {
    // Alternated, the second pass kept: both warmed up, both under the same load.
    timings.x25519 = { openssl: perCall(agreement(native), 20), noble: perCall(agreement(nobleX25519), 20) };
    timings.keystream = { openssl: perCall(() => keystream(seed, 4 * length), 10), noble: perCall(() => keystream(seed, 4 * length, "noble"), 10) };
  }
  const row = (what: string, t: { openssl: number; noble: number }) => `  ${what.padEnd(58)} OpenSSL ${(t.openssl * 1000).toFixed(2)} ms, @noble ${(t.noble * 1000).toFixed(2)} ms: ${(t.noble / t.openssl).toFixed(1)}x`;
  console.log("OpenSSL against @noble, in this process (item 6):");
  console.log(row("X25519: a key pair and 8 neighbours' shared secrets", timings.x25519));
  console.log(row(`a mask's ChaCha20 keystream (${length} words)`, timings.keystream));
}
