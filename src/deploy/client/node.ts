/**
 * `fedtensor client` in Node: the client core (core.ts) over a ws WebSocket, with
 * onnxruntime-node. Its examples come from a record file (x and y, protocol/record.ts) or, for
 * demos and tests, from a named data set's partition as the run splits it (--dataset mnist
 * --client-index i: src/lib/data, the run's partition code). When the connection drops (the
 * server restarted), it reconnects with exponential backoff and jitter. Permanent outcomes end
 * it: the server's `finished` (exit 0), a refusal (a bad, revoked or in-use token: FT340) and a
 * server certificate that fails verification (FT353), which would fail the same way again.
 */
import { randomBytes } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { identityOf, type Identity } from "../secagg/index.js";
import { WebSocket } from "ws";
import { ftError } from "../../errors/error.js";
import type { RunInfo } from "../protocol/messages.js";
import { examplesFromRecord, type ClientExamples } from "./batches.js";
import { ClientCore, FinishedError, FrameError, RefusedError, type OrtLike } from "./core.js";
import { loadOnnxruntimeNode, ortOnThread, ortThreadAvailable } from "./ort-thread.js";
import { defaultStateDir, FileStateStorage } from "./state-file.js";

export interface NodeClientSettings {
  readonly server: string;
  readonly token: string;
  /** A record file with x [n, ...] and y [n], or a demo partition's client. */
  readonly data: { readonly file: string } | { readonly dataset: string; readonly clientIndex: number };
  /** PEM certificates to trust besides the system's (a server with a self-signed --tls-cert). */
  readonly ca?: string;
  readonly maxBackoffMs: number;
  readonly log: (line: string) => void;
  /** Every frame the client sends, before it is sent (the privacy test records them). */
  readonly onSend?: (bytes: Uint8Array) => void;
  /** Every frame the client receives, before it is handled (the client-state test records them). */
  readonly onReceive?: (bytes: Uint8Array) => void;
  /** Stop after the server ends the run (closes with 1001) instead of reconnecting. */
  readonly exitWhenServerStops?: boolean;
  /** A file holding this client's SecAgg+ identity key (made on first use): a restarted client keeps its identity, which its peers pinned. */
  readonly identityKeyFile?: string;
  /** The folder of its state in stateful runs (state-file.ts); defaultStateDir() when absent. */
  readonly stateDir?: string;
  /** onnxruntime's intra-op threads for local training (default: onnxruntime's, one per core). */
  readonly threads?: number;
}

/**
 * The identity key kept in `path` (64 hex characters, the Ed25519 secret key), made from the OS
 * CSPRNG and written with mode 0600 when the file does not exist yet.
 */
export function loadIdentityKey(path: string): Identity {
  let text: string | undefined;
  try {
    text = readFileSync(path, "utf8").trim();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw ftError("FT305", { option: "--identity-key", why: `cannot read ${path}: ${(error as Error).message}` });
  }
  if (text === undefined) {
    const secretKey = new Uint8Array(randomBytes(32));
    writeFileSync(path, `${Buffer.from(secretKey).toString("hex")}\n`, { mode: 0o600, flag: "wx" });
    return identityOf(secretKey);
  }
  if (!/^[0-9a-f]{64}$/.test(text)) throw ftError("FT305", { option: "--identity-key", why: `${path} does not hold an identity key (64 hex characters)` });
  return identityOf(new Uint8Array(Buffer.from(text, "hex")));
}

/** A record file's examples: x float32 or int32 [n, ...], y int32 [n]. */
export function readExamplesFile(path: string): ClientExamples {
  const what = `data file ${path}`;
  let bytes;
  try {
    bytes = readFileSync(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== undefined) throw ftError("FT302", { what, why: (error as Error).message });
    throw error;
  }
  return examplesFromRecord(bytes, what);
}

/** Client `index` of the run's partition of `dataset`, as `fedtensor run` splits it (the run's seed, clients, partition). */
async function demoExamples(dataset: string, index: number, run: RunInfo): Promise<ClientExamples> {
  if (dataset !== run.data.dataset) throw ftError("FT305", { option: "--dataset", why: `the run trains on ${run.data.dataset}, not ${dataset}` });
  if (!Number.isInteger(index) || index < 0 || index >= run.data.clients) throw ftError("FT305", { option: "--client-index", why: `the run has clients 0 to ${run.data.clients - 1}, not ${index}` });
  const { federatedData } = await import("../../lib/run/setup.js");
  // The fields federatedData reads: the data set and how the run splits it.
  const data = federatedData({ dataset: run.data.dataset, partition: run.data.partition, clients: run.data.clients, seed: run.data.seed, alpha: run.data.alpha, clientHoldout: 0 } as never);
  const indices = data.clientIndices[index]!;
  const size = data.train.featureShape.reduce((a, b) => a * b, 1);
  const x = new (data.train.x instanceof Int32Array ? Int32Array : Float32Array)(indices.length * size);
  indices.forEach((example, i) => x.set(data.train.x.subarray(example * size, (example + 1) * size), i * size));
  return { x, y: Int32Array.from(indices, (example) => data.train.y[example]!) };
}

/** Runs the client until the run finishes (0), it is refused (FT340), the server's certificate fails (FT353) or, with exitWhenServerStops, the server stops (0). */
export async function runNodeClient(settings: NodeClientSettings): Promise<number> {
  const ort = await clientOrt();
  const sessions = settings.threads === undefined ? ort : withThreads(ort, settings.threads);
  const fileExamples = "file" in settings.data ? readExamplesFile(settings.data.file) : undefined;
  const load = async (run: RunInfo) => fileExamples ?? (await demoExamples((settings.data as { dataset: string }).dataset, (settings.data as { clientIndex: number }).clientIndex, run));
  const identity = settings.identityKeyFile === undefined ? undefined : loadIdentityKey(settings.identityKeyFile);
  const core = new ClientCore(sessions, settings.token, "node", load, {
    status: settings.log,
    trained: (round, seconds) => settings.log(`round ${round}: trained locally in ${seconds.toFixed(2)} s; update sent`),
    localLoss: (round, loss) => settings.log(`round ${round}: local training loss ${loss.toFixed(4)} (this client's own; not sent)`),
    roundEnd: (round, merged, loss) => settings.log(`round ${round}: ${merged ? "merged" : "not merged"}${loss === null ? "" : `, round's training loss ${loss.toFixed(4)}`}`),
    stateRead: (round, from) => settings.log(`round ${round}: ${from === undefined ? "no client state yet; starting from the server's initial value" : `starting from this client's state of round ${from}`}`),
    stateKept: (round, where) => settings.log(`round ${round}: client state kept in ${where} (not sent)`),
  }, identity, new FileStateStorage(settings.stateDir ?? defaultStateDir()));
  const ca = settings.ca === undefined ? undefined : readFileSync(settings.ca);
  let backoff = 250;
  try {
    for (;;) {
      const outcome = await connectOnce(settings, core, ca, () => (backoff = 250));
      if (typeof outcome === "object") {
        if ("refused" in outcome) throw ftError("FT340", { url: settings.server, why: outcome.refused });
        if ("untrusted" in outcome) throw ftError("FT353", { url: settings.server, why: outcome.untrusted });
        settings.log(`the server finished the run after ${outcome.finished} rounds; exiting`);
        return 0;
      }
      if (outcome === "stopped" && settings.exitWhenServerStops) return 0;
      // Exponential backoff with full jitter, so that a restarted server is not met by every client at once.
      const wait = Math.round(Math.random() * backoff);
      settings.log(`connection closed; reconnecting in ${(wait / 1000).toFixed(1)} s`);
      await new Promise((resolve) => setTimeout(resolve, wait));
      backoff = Math.min(settings.maxBackoffMs, backoff * 2);
    }
  } finally {
    await core.close();
    await ort.close?.();
  }
}

/** onnxruntime-node on a worker thread where the client runs compiled (ort-thread.ts says why), else on this thread. */
async function clientOrt(): Promise<OrtLike & { close?(): Promise<void> }> {
  return ortThreadAvailable ? ortOnThread() : ((await loadOnnxruntimeNode()) as unknown as OrtLike);
}

/**
 * `ort` whose sessions run their kernels on `threads` threads, for a client that should leave
 * its machine's other cores free, or one of many sharing a machine (the served demo's 20 clients
 * on 2 cores: 1.2-1.4x faster rounds with one each; docs/benchmarks.md).
 */
function withThreads(ort: OrtLike, threads: number): OrtLike {
  return {
    Tensor: ort.Tensor,
    InferenceSession: { create: (model, options) => ort.InferenceSession.create(model, { ...options, intraOpNumThreads: threads, interOpNumThreads: 1 }) },
  };
}

type Outcome = { readonly refused: string } | { readonly untrusted: string } | { readonly finished: number } | "stopped" | "lost";

/** TLS verification failures (node:tls's codes): the same certificate fails every attempt. */
const certificateError = /CERT|SELF_SIGNED|UNABLE_TO_VERIFY|UNABLE_TO_GET_ISSUER/;

/** One connection, until it closes: refused or untrusted (do not retry), finished, "stopped" (the server went away with 1001) or "lost". */
function connectOnce(settings: NodeClientSettings, core: ClientCore, ca: Buffer | undefined, connected: () => void): Promise<Outcome> {
  return new Promise((resolve) => {
    const socket = new WebSocket(settings.server, { ...(ca === undefined ? {} : { ca }), maxPayload: 1024 * 1024 * 1024 });
    let outcome: Outcome = "lost";
    const send = (bytes: Uint8Array) => {
      settings.onSend?.(bytes);
      socket.send(bytes);
    };
    // Messages are handled one at a time, in order: a task must find the part sent before it. A secure
    // round's training runs beside the queue (its answer goes out through `send` when it ends), so the key setup goes on meanwhile.
    let queue = Promise.resolve();
    socket.on("open", () => {
      connected();
      send(core.hello());
    });
    socket.on("message", (data: Buffer) => {
      settings.onReceive?.(new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
      queue = queue.then(async () => {
        try {
          for (const reply of await core.handle(new Uint8Array(data.buffer, data.byteOffset, data.byteLength), send)) send(reply);
        } catch (error) {
          if (error instanceof RefusedError) {
            outcome = { refused: error.message };
          } else if (error instanceof FinishedError) {
            outcome = { finished: error.rounds };
          } else settings.log(`${error instanceof FrameError ? "a malformed message from the server" : "error"}: ${(error as Error).message}`);
          socket.close();
        }
      });
    });
    socket.on("error", (error: Error & { code?: string }) => {
      if (certificateError.test(error.code ?? "")) outcome = { untrusted: `${error.message} (${error.code})` };
      else settings.log(`connection: ${error.message}`);
    });
    socket.on("close", (code) => {
      if (code === 1001 && outcome === "lost") outcome = "stopped";
      void queue.then(() => resolve(outcome));
    });
  });
}
