/**
 * Drives a SecAgg+ round in memory, as a transport would: every message goes through
 * encodeMessage and the parsers, so the tests see the wire format. `dropAt` names, per step,
 * the clients that fail to answer it (a dropout); `record` sees every byte the server receives.
 */
import type { CollectingStep } from "../../src/deploy/secagg/server.js";
import {
  type ClientMessage,
  type SecAggRounds,
  type RandomBytes,
  type SecAggEvent,
  type SecAggParams,
  type ServerMessage,
  type StepOutcome,
  SecAggClient,
  SecAggServer,
  encodeMessage,
} from "../../src/deploy/secagg/index.js";

export type DropStep = CollectingStep;

export interface RoundRun {
  readonly server: SecAggServer;
  readonly clients: Map<string, SecAggClient>;
  readonly outcome: StepOutcome;
  readonly received: Uint8Array[];
  readonly sent: Uint8Array[];
  readonly clientEvents: SecAggEvent[];
}

export const ids = (n: number): string[] => Array.from({ length: n }, (_, i) => `client-${String(i).padStart(3, "0")}`);

export async function runRound(
  params: SecAggParams,
  vectors: ReadonlyMap<string, Float32Array | Uint32Array>,
  options: {
    dropAt?: Partial<Record<DropStep, readonly string[]>>;
    record?: (from: string, raw: Uint8Array) => void;
    /** Each client's CSPRNG (default: WebCrypto's); a test may wrap it to see the client's secrets. */
    clientRandom?: (id: string) => RandomBytes;
    /** Called with the server after each step closes (before the next step's answers arrive). */
    afterStep?: (server: SecAggServer) => void;
    /** The fewest clients the server lets a sum hold (min_clients, announced in the setup). */
    minClients?: number;
  } = {},
): Promise<RoundRun> {
  const clientIds = [...vectors.keys()];
  // Uint32Array inputs are already in Z_M (distributed DP's codec): their sum wraps by design, no range to check.
  const preQuantized = [...vectors.values()].some((v) => v instanceof Uint32Array);
  const server = new SecAggServer(options.minClients === undefined ? params : { ...params, min_clients: options.minClients }, clientIds, { preQuantized });
  const clients = new Map<string, SecAggClient>();
  const received: Uint8Array[] = [];
  const sent: Uint8Array[] = [];
  const clientEvents: SecAggEvent[] = [];
  const deliver = (from: string, message: ClientMessage) => {
    const raw = encodeMessage(message);
    received.push(raw);
    options.record?.(from, raw);
    const verdict = server.receive(from, raw);
    if (!verdict.accepted) throw new Error(`refused ${from}: ${verdict.reason}`);
  };
  const drops = (step: DropStep) => new Set(options.dropAt?.[step] ?? []);

  for (const [to, setup] of server.start()) {
    const raw = encodeMessage(setup);
    sent.push(raw);
    const randomBytes = options.clientRandom?.(to);
    const client = SecAggClient.fromSetup(raw, { log: (e) => clientEvents.push(e), ...(randomBytes ? { randomBytes } : {}) });
    clients.set(to, client);
    if (!drops("advertise-keys").has(to)) deliver(to, client.advertiseKeys());
  }
  for (;;) {
    const outcome = await server.advance();
    options.afterStep?.(server);
    if (outcome.kind !== "messages") return { server, clients, outcome, received, sent, clientEvents };
    const dropping = drops(outcome.step);
    for (const [to, message] of outcome.messages) {
      const raw = encodeMessage(message);
      sent.push(raw);
      if (dropping.has(to)) continue;
      const reply = await clients.get(to)!.respond(raw, () => vectors.get(to)!);
      deliver(to, reply);
    }
  }
}

/** Random float32 vectors with values in [-range, range]. */
export function randomVectors(clientIds: readonly string[], length: number, range: number, random: () => number = Math.random): Map<string, Float32Array> {
  return new Map(clientIds.map((id) => [id, Float32Array.from({ length }, () => (2 * random() - 1) * range)]));
}

/** A round driven step by step, so that a test can tamper with a message before it is delivered. */
export class SteppedRound {
  readonly server: SecAggServer;
  readonly clients = new Map<string, SecAggClient>();
  requests = new Map<string, ServerMessage>();
  readonly vectors: ReadonlyMap<string, Float32Array>;

  /** What the clients log (AEAD failures), by client. */
  readonly clientEvents: SecAggEvent[] = [];

  constructor(params: SecAggParams, vectors: ReadonlyMap<string, Float32Array>) {
    this.vectors = vectors;
    this.server = new SecAggServer(params, [...vectors.keys()]);
    for (const [to, setup] of this.server.start()) {
      this.clients.set(to, SecAggClient.fromSetup(encodeMessage(setup), { log: (e) => this.clientEvents.push(e) }));
      this.requests.set(to, setup);
    }
  }

  /** The client's answer to its current request, not delivered. */
  async reply(id: string): Promise<ClientMessage> {
    const client = this.clients.get(id)!;
    const request = this.requests.get(id)!;
    switch (request.step) {
      case "setup":
        return client.advertiseKeys();
      case "share-keys":
        return client.shareKeys(request);
      case "masked-input":
        return client.maskedInput(request, this.vectors.get(id)!);
      case "consistency-check":
        return client.consistencyCheck(request);
      case "unmask":
        return client.unmask(request);
    }
  }

  deliver(id: string, message: ClientMessage | Uint8Array) {
    return this.server.receive(id, message instanceof Uint8Array ? message : encodeMessage(message));
  }

  /** Every client not in `except` answers; returns their messages. */
  async answerAll(except: readonly string[] = []): Promise<Map<string, ClientMessage>> {
    const out = new Map<string, ClientMessage>();
    for (const id of this.requests.keys()) {
      if (except.includes(id)) continue;
      const message = await this.reply(id);
      out.set(id, message);
      const verdict = this.deliver(id, message);
      if (!verdict.accepted) throw new Error(`refused ${id}: ${verdict.reason}`);
    }
    return out;
  }

  async advance(): Promise<StepOutcome> {
    const outcome = await this.server.advance();
    this.requests = outcome.kind === "messages" ? new Map(outcome.messages) : new Map();
    return outcome;
  }
}

/** Raw message bytes as the wire carries them (u32 LE JSON length, the JSON, then `tail`), for tests that forge one. */
export function rawMessage(json: string, tail: Uint8Array = new Uint8Array(0)): Uint8Array {
  const text = new TextEncoder().encode(json);
  const out = new Uint8Array(4 + text.length + tail.length);
  new DataView(out.buffer).setUint32(0, text.length, true);
  out.set(text, 4);
  out.set(tail, 4 + text.length);
  return out;
}

/** The JSON text of raw message bytes. */
export const jsonOf = (raw: Uint8Array): string => new TextDecoder().decode(raw.subarray(4, 4 + new DataView(raw.buffer, raw.byteOffset).getUint32(0, true)));

/**
 * Runs a round of `server` with the clients' SecAggRounds until the server has sent the requests
 * of step `until` (not answered: the server "dies" there) or to its end. Returns the outcome.
 */
export async function driveRounds(server: SecAggServer, rounds: Map<string, SecAggRounds>, vectors: Map<string, Float32Array>, until?: CollectingStep) {
  let requests = new Map([...server.start()].map(([id, m]) => [id, encodeMessage(m)]));
  for (;;) {
    for (const [id, raw] of requests) {
      const answer = await rounds.get(id)!.respond(server.params.round, raw, () => vectors.get(id)!);
      const verdict = server.receive(id, encodeMessage(answer));
      if (!verdict.accepted) throw new Error(`refused ${id}: ${verdict.reason}`);
    }
    const outcome = await server.advance();
    if (outcome.kind !== "messages") return outcome;
    if (outcome.step === until) return outcome;
    requests = new Map([...outcome.messages].map(([id, m]) => [id, encodeMessage(m)]));
  }
}
