/**
 * A client of `fedtensor serve`, apart from its transport and its ONNX runtime, so that the Node
 * client (onnxruntime-node over ws) and the browser page (onnxruntime-web over WebSocket) run
 * the same code. It says hello with its token, then (once welcomed) its number of examples, keeps the client
 * parts the server ships (ONNX models, by content hash), and answers each round's task with the
 * partial accumulator its part computes from the round's shared inputs and its own batches.
 *
 * What leaves the client: hello, ready, update (the accumulator: model-sized sums) and failed. Its
 * examples are read by the ONNX session only, here. A stateful run's client state (state.ts) is
 * read and written here too, and never sent.
 */
import { decodeFrame, encodeFrame, FrameError } from "../protocol/frame.js";
import { serverMessageSchema, WIRE_VERSION, type RunInfo, type ServerMessage } from "../protocol/messages.js";
import { decodeRecord, dtypeOf, encodeRecord, type RecordTensor, type RecordValue } from "../protocol/record.js";
import { encodeMessage, SecAggRounds, type Identity } from "../secagg/index.js";
import { FedTensorError, ftError } from "../../errors/error.js";
import { distributedDpCodec } from "../../lib/privacy/distributed-dp-codec.js";
import { clientBatches, type ClientExamples } from "./batches.js";
import { ClientStateKeeper, MemoryStateStorage, type ClientStateStorage } from "./state.js";

/** What the client needs of an ONNX runtime: onnxruntime-node and onnxruntime-web both have it. */
export interface OrtTensorLike {
  readonly type: string;
  readonly dims: readonly number[];
  readonly data: unknown;
}
export interface OrtSessionLike {
  run(feeds: Record<string, OrtTensorLike>): Promise<Record<string, OrtTensorLike>>;
  release(): Promise<void>;
}
export interface OrtLike {
  readonly Tensor: new (type: "float32" | "int32" | "bool", data: Float32Array | Int32Array | Uint8Array, dims: readonly number[]) => OrtTensorLike;
  readonly InferenceSession: { create(model: Uint8Array, options?: object): Promise<OrtSessionLike> };
}

export interface ClientEvents {
  status(line: string): void;
  /** A round's task done: its number and how long local training took. */
  trained?(round: number, seconds: number): void;
  /** The end of a round the client took part in, as the server reports it. */
  roundEnd?(round: number, merged: boolean, loss: number | null): void;
  /** This client's own mean training loss of a round, from its outputs before any scaling, masking or noise: for it to show, never sent. */
  localLoss?(round: number, loss: number): void;
  /** A message this client sends for a round: its kind (update, trained, failed, or a SecAgg+ step) and its size in bytes. */
  sent?(round: number, kind: string, bytes: number): void;
  /** The round's end as the server reports it, with the run's epsilon after it in distributed-DP runs (null when not finite). */
  epsilon?(round: number, epsilon: number | null): void;
  /** A stateful round's task read this client's state of round `from` (undefined: it had none and started from the server's initial value). */
  stateRead?(round: number, from: number | undefined): void;
  /** This client's state after round `round` was written to `where` (the round merged). */
  stateKept?(round: number, where: string): void;
}

/** The largest part (an ONNX model) a client accepts. */
const MAX_PART_BYTES = 512 * 1024 * 1024;
/** The largest task body (the round's shared inputs) a client accepts. */
const MAX_TASK_BYTES = 512 * 1024 * 1024;
// A SecAgg+ message is checked again by the protocol against its own limit (messageSizeLimit).
const maxBody = { part: MAX_PART_BYTES, task: MAX_TASK_BYTES, secagg: MAX_TASK_BYTES };

interface StoredPart {
  readonly session: OrtSessionLike;
  readonly inputs: readonly string[];
  readonly outputs: readonly string[];
  readonly checks: readonly { readonly output: string; readonly what: string }[];
  readonly loss: { readonly sum: string; readonly weight: string } | undefined;
  /** The client's state inputs and the outputs it writes them from; never sent. */
  readonly state: readonly { readonly input: string; readonly output: string }[];
}

export class ClientCore {
  private run: RunInfo | undefined;
  private readonly parts = new Map<string, StoredPart>();
  private examples: ClientExamples | undefined;
  /**
   * A secure round's task: the accumulator (times the round's scale) its training gives, kept
   * here until the masked-input step (undefined when the training failed), and the key of the
   * task that gave it.
   */
  private secureTask: SecureTask | undefined;
  /** SecAgg+ across rounds and server restarts (a resumed server sets its round up again), signing with this client's identity. */
  private readonly secagg: SecAggRounds;
  /** The client id the server gave, after welcome. */
  clientId: string | undefined;
  /** This client's state in the run it joined (stateful runs read and write it). */
  private state: ClientStateKeeper | undefined;

  constructor(
    private readonly ort: OrtLike,
    private readonly token: string,
    private readonly agent: "node" | "browser",
    /** The client's examples, once the run (its feature shape, its demo partition) is known. */
    private readonly loadExamples: (run: RunInfo) => Promise<ClientExamples>,
    private readonly events: ClientEvents,
    /** The long-term Ed25519 identity that signs its SecAgg+ keys (default: a fresh one for this client's life). */
    identity?: Identity,
    /** Where it keeps its state in stateful runs (default: memory, for this client's life). */
    private readonly stateStorage: ClientStateStorage = new MemoryStateStorage(),
  ) {
    this.secagg = new SecAggRounds(identity === undefined ? {} : { identity });
  }

  /** The first message on every connection. */
  hello(): Uint8Array {
    return encodeFrame({ v: WIRE_VERSION, type: "hello", token: this.token, agent: this.agent });
  }

  /**
   * Handles one message from the server; returns the replies to send. Throws FrameError for a
   * message that is not the protocol's, and RefusedError when the server refused this client.
   * `later` takes the answer to a secure round's task, sent when its training ends: with it the
   * call returns at once, so that the round's key setup (sent with the task) runs while this
   * client trains; without it the call waits for the training and returns the answer.
   */
  async handle(bytes: Uint8Array, later?: (frame: Uint8Array) => void): Promise<Uint8Array[]> {
    const { header, body } = decodeFrame(bytes, serverMessageSchema, maxBody, MAX_PART_BYTES + 65536);
    return this.dispatch(header, body, later);
  }

  private async dispatch(message: ServerMessage, body: Uint8Array, later: ((frame: Uint8Array) => void) | undefined): Promise<Uint8Array[]> {
    switch (message.type) {
      case "refused":
        throw new RefusedError(message.reason);
      case "welcome":
        // A reconnection to the same run keeps the state staged for a round still open.
        if (this.clientId !== message.clientId || this.run?.name !== message.run.name) this.state = new ClientStateKeeper(this.stateStorage, message.run.name, message.clientId);
        this.clientId = message.clientId;
        this.run = message.run;
        this.examples ??= await this.loadExamples(message.run);
        this.events.status(`joined run ${message.run.name} as ${message.clientId} (${message.run.algorithm}, ${message.run.model}) with ${this.examples.y.length} examples`);
        return [encodeFrame({ v: WIRE_VERSION, type: "ready", examples: this.examples.y.length })];
      case "part": {
        if (!this.parts.has(message.hash)) {
          await checkHash(body, message.hash);
          // Errors only: onnxruntime warns about graph rewrites that change nothing for the client.
          const session = await this.ort.InferenceSession.create(body, { executionProviders: ["cpu"], graphOptimizationLevel: "all", logSeverityLevel: 3 });
          this.parts.set(message.hash, { session, inputs: message.inputs, outputs: message.outputs, checks: message.checks, loss: message.loss, state: message.state ?? [] });
        }
        return [];
      }
      case "task": {
        if (message.scale === undefined) return this.sent(message.round, [(await this.train(message, body)).frame]);
        // The task is held (its training started) before this call returns: the round's setup comes next.
        const answer = this.trainSecure(message, body, await taskKey(message, body));
        if (later === undefined) return this.sent(message.round, [await answer]);
        void answer.then((frame) => later(this.sent(message.round, [frame])[0]!));
        return [];
      }
      case "round-end":
        this.events.roundEnd?.(message.round, message.merged, message.loss);
        if (message.merged && (await this.state?.commit(message.round))) this.events.stateKept?.(message.round, this.state!.where);
        if (message.epsilon !== undefined) this.events.epsilon?.(message.round, message.epsilon);
        if (this.secureTask?.round === message.round) this.secureTask = undefined;
        return [];
      case "secagg":
        return this.sent(message.round, await this.secure(message.round, body));
      case "finished":
        throw new FinishedError(message.rounds);
    }
  }

  /** Reports what leaves this client for `round` (the type each frame's header names), and passes the frames on. */
  private sent(round: number, frames: Uint8Array[]): Uint8Array[] {
    for (const frame of frames) {
      const headerLength = new DataView(frame.buffer, frame.byteOffset, frame.byteLength).getUint32(0, true);
      const { type } = JSON.parse(new TextDecoder().decode(frame.subarray(4, 4 + headerLength))) as { type: string };
      this.events.sent?.(round, type, frame.length);
    }
    return frames;
  }

  /**
   * A SecAgg+ message for a secure round: the setup starts this client's side, later steps answer
   * the server's requests. Only for the round of a task this client holds; its masked input waits
   * for that task's training, and a client whose training failed (the server was told) leaves the
   * round without an answer.
   */
  private async secure(round: number, body: Uint8Array): Promise<Uint8Array[]> {
    const reply = (message: object) => [encodeFrame({ v: WIRE_VERSION, type: "secagg", round }, encodeMessage(message as never))];
    const task = this.secureTask;
    if (task === undefined || task.round !== round) throw new FrameError(`a secure-sum message for round ${round}, for which this client holds no task`);
    const vector = async () => (await task.vector) ?? Promise.reject(new NotTrained());
    let answer;
    try {
      answer = await this.secagg.respond(round, body, vector, Math.max(this.run?.minClients ?? 0, task.minClients));
    } catch (error) {
      if (error instanceof NotTrained) return [];
      // A refused request (FT336, FT357, FT370-FT372) or a setup of a round this client unmasked (FT356): it leaves the round, the server goes on.
      if (error instanceof FedTensorError) throw new FrameError(`a secure-sum message refused: ${error.message}`);
      throw error;
    }
    if (answer.step === "unmask") this.secureTask = undefined;
    return reply(answer);
  }

  /**
   * A secure round's task: the "trained" (or "failed") answer once its training ends, which holds
   * the accumulator for the masked input. A resumed server sends the round's task again: the same
   * task (part, steps, scale, noise parameters, inputs) is answered with the accumulator already
   * held (or in training), so the round loses no work and a distributed-DP client adds its noise once.
   */
  private async trainSecure(task: Task, body: Uint8Array, key: string): Promise<Uint8Array> {
    const same = this.secureTask;
    if (same?.round === task.round && same.task === key) return (await same.vector) === undefined ? failedFrame(task, "its training failed") : trainedFrame(task);
    const training = this.train(task, body).catch((error: unknown) => ({ frame: failedFrame(task, `training failed: ${(error as Error).message}`), vector: undefined }));
    this.secureTask = { round: task.round, task: key, minClients: task.ddp?.minClients ?? 0, vector: training.then((t) => t.vector) };
    return (await training).frame;
  }

  /** Runs a task's part on this client's batches: the update to send, or (secure rounds) the scaled accumulator to hold. */
  private async train(task: Task, body: Uint8Array): Promise<{ frame: Uint8Array; vector?: Float32Array | Uint32Array }> {
    const failed = (reason: string) => ({ frame: failedFrame(task, reason) });
    const part = this.parts.get(task.part);
    if (part === undefined || this.run === undefined || this.examples === undefined) return failed(`no part ${task.part.slice(0, 12)} here (it was not sent)`);
    const started = performance.now();
    const shared = decodeRecord(body);
    const own = clientBatches(this.examples, { steps: task.steps, batchSize: this.run.batchSize, epochs: this.run.epochs, featureShape: this.run.featureShape });
    const state = await this.stateFor(part, task.round, shared);
    if (typeof state === "string") return failed(state);
    const feeds: Record<string, OrtTensorLike> = {};
    for (const name of part.inputs) {
      const value: RecordValue | undefined = (own as Record<string, RecordTensor>)[name] ?? state.get(name) ?? shared.get(name);
      if (value === undefined) return failed(`the task has no input ${name}`);
      feeds[name] = typeof value === "number" ? new this.ort.Tensor("float32", Float32Array.of(value), []) : new this.ort.Tensor(value.dtype, value.data, value.shape);
    }
    const results = await part.session.run(feeds);
    for (const check of part.checks) {
      const count = Number((results[check.output]!.data as ArrayLike<number | bigint>)[0]);
      if (count !== 0) return failed(`${check.what}: ${count} values failed the check`);
    }
    // The next state stays here (written when the round merges); the accumulator is all that leaves.
    if (part.state.length > 0) this.state!.stage(task.round, new Map(part.state.map(({ input, output }) => [input, tensorOf(results[output]!)])));
    const accumulator = part.outputs.filter((name) => !part.state.some((s) => s.output === name));
    this.events.trained?.(task.round, (performance.now() - started) / 1000);
    const lossOf = (name: string) => Number((results[name]?.data as ArrayLike<number> | undefined)?.[0]);
    if (part.loss !== undefined && lossOf(part.loss.weight) > 0) this.events.localLoss?.(task.round, lossOf(part.loss.sum) / lossOf(part.loss.weight));
    if (task.scale !== undefined) {
      // Secure: the accumulator stays here, scaled, until SecAgg+ masks it; the server gets the sum only.
      const length = accumulator.reduce((n, name) => n + (results[name]!.data as ArrayLike<number>).length, 0);
      const vector = new Float32Array(length);
      let offset = 0;
      for (const name of accumulator) {
        const data = results[name]!.data as ArrayLike<number>;
        for (let i = 0; i < data.length; i++) vector[offset + i] = data[i]! * task.scale;
        offset += data.length;
      }
      // Distributed DP: clipped, rotated, rounded and noised here; SecAgg+ sums the integers mod 2^bits as they are.
      const held = task.ddp === undefined ? vector : new Uint32Array(distributedDpCodec({ ...task.ddp, rotationKey: [task.ddp.rotationKey[0], task.ddp.rotationKey[1]], length }).encode(vector).buffer);
      return { frame: trainedFrame(task), vector: held };
    }
    const acc = new Map<string, RecordValue>(accumulator.map((name) => [name, tensorOf(results[name]!)]));
    return { frame: encodeFrame({ v: WIRE_VERSION, type: "update", round: task.round, task: task.task }, encodeRecord(acc)) };
  }

  /**
   * The part's state inputs for the task of `round`: this client's newest state of a round
   * before it, or the task's initial value (a client without state); a reason to fail the task
   * when the kept state is not the part's (FT366).
   */
  private async stateFor(part: StoredPart, round: number, shared: ReadonlyMap<string, RecordValue>): Promise<Map<string, RecordTensor> | string> {
    if (part.state.length === 0) return new Map();
    let saved;
    try {
      saved = await this.state!.before(round);
    } catch (error) {
      if (error instanceof FedTensorError) return error.message;
      throw error;
    }
    this.events.stateRead?.(round, saved?.round);
    const values = new Map<string, RecordTensor>();
    for (const { input } of part.state) {
      const initial = shared.get(`initial:${input}`);
      if (initial === undefined || typeof initial === "number") return `the task has no initial value of the state input ${input}`;
      const kept = saved?.tensors.get(input);
      if (saved !== undefined && (kept === undefined || kept.shape.join(",") !== initial.shape.join(","))) {
        const found = kept === undefined ? "none" : `[${kept.shape.join(", ")}]`;
        return ftError("FT366", { where: this.state!.where, why: `the run's state input ${input} is [${initial.shape.join(", ")}], the kept state's ${found}` }).message;
      }
      values.set(input, kept ?? initial);
    }
    return values;
  }

  /** Frees the ONNX sessions. */
  async close(): Promise<void> {
    await Promise.all([...this.parts.values()].map((p) => p.session.release()));
    this.parts.clear();
  }
}

/** An ONNX output as a record tensor. */
function tensorOf(out: OrtTensorLike): RecordTensor {
  const data = out.data as Float32Array | Int32Array | Uint8Array;
  return { dtype: out.type === "bool" ? "bool" : dtypeOf(data), shape: [...out.dims], data };
}

type Task = Extract<ServerMessage, { type: "task" }>;
/** A task's answers that carry no accumulator: a secure task trained (the accumulator is held here), or failed. */
const trainedFrame = (task: Task) => encodeFrame({ v: WIRE_VERSION, type: "trained", round: task.round, task: task.task });
const failedFrame = (task: Task, reason: string) => encodeFrame({ v: WIRE_VERSION, type: "failed", round: task.round, task: task.task, reason });

/** A secure round's task whose training is under way or done. */
interface SecureTask {
  readonly round: number;
  readonly task: string;
  readonly minClients: number;
  readonly vector: Promise<Float32Array | Uint32Array | undefined>;
}

/** The masked input was asked for of a client whose training failed. */
class NotTrained extends Error {}

/** The server refused this client (a bad token, another wire version): reconnecting will not help. */
export class RefusedError extends Error {}

/** The server ended the run after `rounds` rounds: there is nothing to reconnect for. */
export class FinishedError extends Error {
  constructor(readonly rounds: number) {
    super(`the run finished after ${rounds} rounds`);
  }
}

/** What makes two tasks of a round the same computation: its fields but the task id and deadline, and its inputs' bytes. */
async function taskKey(task: Task, body: Uint8Array): Promise<string> {
  const { task: _id, deadlineMs: _deadline, ...fields } = task;
  const text = new TextEncoder().encode(JSON.stringify(fields));
  const bytes = new Uint8Array(text.length + body.length);
  bytes.set(text);
  bytes.set(body, text.length);
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
  return Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** A part whose bytes do not hash to its name is refused: the hash is what the client caches it by. */
async function checkHash(bytes: Uint8Array, hash: string): Promise<void> {
  // Copied into its own ArrayBuffer: WebCrypto takes no view of a shared buffer.
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", new Uint8Array(bytes)));
  const hex = Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join("");
  if (hex !== hash) throw new FrameError(`a part whose bytes hash to ${hex.slice(0, 12)}, not ${hash.slice(0, 12)}`);
}

export { FrameError };
