/**
 * A round's work at the clients, as the chunk engine of the round runner (src/lib/run/cohort.ts):
 * each cohort member is a chunk of one client. The member gets the client part (once per part
 * hash) and a task carrying the round's shared inputs; its answer, the partial accumulator, is
 * checked against the accumulator's names, dtypes and shapes (the program's types) and must be
 * finite. Members that do not answer by the deadline, fail, or answer wrongly drop out of the
 * round; with fewer than --min-clients left the round is aborted (RoundAborted) and the model
 * stays as it was. The accepted accumulators are merged in cohort order by the runner.
 */
import { randomUUID } from "node:crypto";
import * as tf from "@tensorflow/tfjs";
import type { ChunkEngine } from "../../lib/run/cohort.js";
import type { MapReduceForm } from "../../transform/mapreduce.js";
import { encodeFrame } from "../protocol/frame.js";
import { WIRE_VERSION } from "../protocol/messages.js";
import { decodeRecord, encodeRecord, RecordError, type RecordTensor, type RecordValue } from "../protocol/record.js";
import type { Member, MemberMessage } from "./clients.js";
import { PartCompiler } from "./compile.js";
import { RoundAborted, SumDiscarded } from "./round-aborted.js";
import { SecureSum, type RangeSettings, type ShareSettings } from "./secure.js";
import { IdentityPins, type ReusedKeys } from "../secagg/index.js";
import { distributedDpCodec, type DistributedDpCodec, type DistributedDpCodecOptions } from "../../lib/privacy/distributed-dp-codec.js";

export interface TaskSettings {
  readonly deadlineMs: number;
  readonly minClients: number;
  readonly batchSize: number;
  readonly featureShape: readonly number[];
  /** Sum the accumulators with SecAgg+ (secure.ts) instead of receiving each. */
  readonly secure: boolean;
  /** --num-shares and --reconstruction-threshold of secure rounds (defaults when absent). */
  readonly shares?: ShareSettings;
  /** --clipping-range, --quantization-range and --modulus-range of secure rounds without distributed DP (defaults when absent). */
  readonly ranges?: RangeSettings;
  /**
   * Distributed DP (with secure): the codec's options, and each round's rotation key (from the
   * run's secret). The members encode their scaled accumulators, SecAgg+ sums the integers mod
   * 2^bits, and the server decodes the survivors' sum.
   */
  readonly ddp?: { options(length: number): Omit<DistributedDpCodecOptions, "length" | "rotationKey">; rotationKey(round: number): [number, number] };
  readonly log: (line: string) => void;
}

/** A member's answer in a secure round: it trained and holds its accumulator for the secure sum. */
const TRAINED: unique symbol = Symbol("trained");
type Answer = Map<string, RecordValue> | string | typeof TRAINED;

interface Pending {
  readonly member: Member;
  readonly round: number;
  resolve(result: Answer): void;
}

/** What a round's clients did, for its metrics row. */
export interface RoundTraffic {
  merged: number;
  dropped: number;
  /** 1 when the round's secure sum lay outside the range honest inputs allow and was discarded (FT355). */
  discarded: number;
  bytesOut: number;
  bytesIn: number;
}

export class RoundTasks {
  private readonly pending = new Map<string, Pending>();
  private readonly compilers = new WeakMap<MapReduceForm, PartCompiler>();
  /** The secure sum in progress, and its round. */
  private secureRound: { round: number; sum: SecureSum; members: ReadonlySet<Member> } | undefined;

  /** The clients' SecAgg+ identity keys, pinned for the life of this server (trust on first use). */
  private readonly pins = new IdentityPins();
  private keysForReuse: ReusedKeys | undefined;

  /** The length of the accumulator as one vector, once a round has compiled its client part (the epsilon column's dimension). */
  accumulatorLength: number | undefined;

  constructor(private readonly settings: TaskSettings) {}

  /** The secure sum in progress, its SecAgg+ step and whom it waits for (/status); null when none. */
  secureProgress(): { round: number; step: string; waitingFor: string[] } | null {
    return this.secureRound === undefined ? null : { round: this.secureRound.round, ...this.secureRound.sum.progress() };
  }

  /** An update or failure from a member: settles its task when it is one the member holds in the current round. */
  onMessage({ member, message, body }: MemberMessage): void {
    if (message.type === "secagg") {
      const current = this.secureRound;
      if (current === undefined || current.round !== message.round || !current.members.has(member)) {
        this.settings.log(`refused a secagg message from ${member.id} for round ${message.round}: no secure sum of this client in flight (replayed, late or out of round)`);
        return;
      }
      return current.sum.receive(member, body);
    }
    const task = this.pending.get(message.task);
    if (task === undefined || task.member.id !== member.id || task.round !== message.round) {
      this.settings.log(`refused a ${message.type} from ${member.id} for round ${message.round}: no such task of this client in flight (replayed, late or out of round)`);
      return;
    }
    this.pending.delete(message.task);
    if (message.type === "failed") return task.resolve(`failed: ${message.reason}`);
    if (message.type === "trained") return task.resolve(this.settings.secure ? TRAINED : "a trained message in a round that is not secure");
    if (this.settings.secure) return task.resolve("an update in the clear in a secure round (refused, not read)");
    try {
      task.resolve(decodeRecord(body));
    } catch (error) {
      task.resolve(error instanceof RecordError ? `a malformed update: ${error.message}` : String(error));
    }
  }

  /** A member left: its tasks fail now rather than at the deadline. */
  onLeave(member: Member): void {
    for (const [id, task] of this.pending) {
      if (task.member === member) {
        this.pending.delete(id);
        task.resolve("disconnected");
      }
    }
    this.secureRound?.sum.left();
  }

  /** The chunk engine of round `round` over `cohort` (chunk client i is cohort[i]). */
  engineFor(round: number, cohort: readonly Member[], traffic: RoundTraffic): ChunkEngine {
    return {
      partials: (form, _inputTree, chunks) => (shared) => this.partials(round, form, cohort, chunks.map((c) => ({ member: cohort[c.clients[0]!]!, position: c.positions[0]!, steps: c.steps })), shared, traffic),
      keepsClientState: true,
    };
  }

  private compilerFor(form: MapReduceForm): PartCompiler {
    let compiler = this.compilers.get(form);
    if (compiler === undefined) this.compilers.set(form, (compiler = new PartCompiler(form)));
    return compiler;
  }

  private async *partials(
    round: number,
    form: MapReduceForm,
    cohort: readonly Member[],
    jobs: readonly { member: Member; position: number; steps: number }[],
    shared: ReadonlyMap<string, unknown>,
    traffic: RoundTraffic,
  ): AsyncIterable<Map<string, tf.Tensor>> {
    const compiler = this.compilerFor(form);
    const expected = await compiler.accumulator;
    this.accumulatorLength = [...expected.values()].reduce((n, t) => n + t.shape.reduce((a, b) => a * b, 1), 0);
    const ddpSettings = this.settings.ddp;
    // Built before any task goes out, so that a calibration the options cannot meet (FT346) stops the run at the server.
    const codecOptions = ddpSettings === undefined ? undefined : { ...ddpSettings.options(this.accumulatorLength), rotationKey: ddpSettings.rotationKey(round) };
    const codec = codecOptions === undefined ? undefined : distributedDpCodec({ ...codecOptions, length: this.accumulatorLength });
    const ddp = codecOptions === undefined ? {} : { ddp: codecOptions };
    const records = new Map<string, Uint8Array>();
    // A secure round's public scale: 1 / the largest example count in the cohort (secure.ts says why).
    const scale = 1 / Math.max(...cohort.map((m) => m.examples));
    const tasks = await Promise.all(
      jobs.map(async ({ member, position, steps }) => {
        const part = await compiler.part({ steps, batchSize: this.settings.batchSize, featureShape: this.settings.featureShape }, shared);
        const key = part.shared.join(",");
        let record = records.get(key);
        if (record === undefined) records.set(key, (record = encodeRecord(await sharedRecord(part.shared, shared))));
        // A stateful part's task also carries where a client without state starts (the server's value, never a client's).
        if (part.state.length > 0) record = encodeRecord(new Map([...decodeRecord(record), ...initialState(part.state, shared, position)]));
        if (!member.parts.has(part.hash)) {
          // A form without local-loss or state entries leaves them undefined, which JSON leaves out.
          const state = part.state.length === 0 ? undefined : part.state;
          const frame = encodeFrame({ v: WIRE_VERSION, type: "part", hash: part.hash, inputs: part.inputs, outputs: part.outputs, checks: part.checks, loss: part.loss, state }, part.bytes);
          member.send(frame);
          member.parts.add(part.hash);
          traffic.bytesOut += frame.length;
        }
        const task = randomUUID();
        const secure = this.settings.secure ? { scale } : {};
        const frame = encodeFrame({ v: WIRE_VERSION, type: "task", round, task, part: part.hash, steps, deadlineMs: this.settings.deadlineMs, ...secure, ...ddp }, record);
        traffic.bytesOut += frame.length;
        return { member, task, frame };
      }),
    );
    // The tasks go out together, and a secure round's key setup right after them: it runs while the members train.
    const answers = tasks.map(({ member, task, frame }) => this.await(task, member, round, () => member.send(frame)).then((answer): { member: Member; answer: Answer } => ({ member, answer })));
    if (this.settings.secure) {
      yield await this.secureSum(round, cohort, scale, answers, expected, traffic, codec);
      return;
    }
    const accepted: Map<string, RecordTensor>[] = [];
    for (const { member, answer } of await Promise.all(answers)) {
      const problem = typeof answer === "string" ? answer : answer === TRAINED ? "trained in a round that is not secure" : accumulatorProblem(answer, expected);
      if (problem !== undefined) {
        this.settings.log(`round ${round}: ${member.id} dropped out: ${problem}`);
        continue;
      }
      accepted.push(answer as Map<string, RecordTensor>);
    }
    traffic.merged = accepted.length;
    traffic.dropped = cohort.length - accepted.length;
    if (accepted.length < this.settings.minClients) throw new RoundAborted(`${accepted.length} of ${cohort.length} clients sent a valid update, fewer than --min-clients ${this.settings.minClients}`);
    for (const acc of accepted) {
      for (const t of acc.values()) traffic.bytesIn += t.data.byteLength;
      yield new Map([...acc].map(([name, t]) => [name, tf.tensor(t.data, [...t.shape], t.dtype)]));
    }
  }

  /**
   * The members sum their accumulators with SecAgg+; the server gets the sum of the survivors'
   * (scaled) accumulators only, as one partial accumulator. The sum's key setup starts with the
   * tasks; a member whose task fails (or times out, or that leaves) is dropped from the sum at
   * once, so no step waits for it: before its masked input it is left out of the sum. The sum is
   * divided by `scale`, the tasks' public scale.
   */
  private async secureSum(
    round: number,
    members: readonly Member[],
    scale: number,
    answers: readonly Promise<{ member: Member; answer: Answer }>[],
    expected: Awaited<PartCompiler["accumulator"]>,
    traffic: RoundTraffic,
    codec: DistributedDpCodec | undefined,
  ): Promise<Map<string, tf.Tensor>> {
    const cohort = members.length;
    if (cohort < Math.max(2, this.settings.minClients)) {
      this.settle(round, "the round aborted before its secure sum");
      throw new RoundAborted(`${cohort} clients in the cohort, fewer than the secure sum needs (${Math.max(2, this.settings.minClients)})`);
    }
    const length = this.accumulatorLength!;
    const vectorLength = codec === undefined ? length : codec.calibration.dimension;
    const { deadlineMs, shares, ranges, log } = this.settings;
    // No sum of fewer than --min-clients (distributed DP's noise is calibrated for its own minimum): SecAgg+ aborts before it could be unmasked, and each client refuses a smaller cohort.
    const minClients = Math.max(this.settings.minClients, codec?.calibration.minClients ?? 0);
    // The last secure round's key setup, taken only by a cohort of the same members with nothing dropped since (reuse.ts).
    const reuse = this.keysForReuse;
    this.keysForReuse = undefined;
    const sum = new SecureSum(round, members, vectorLength, { deadlineMs, shares, ranges, log, minClients, pins: this.pins, ...(reuse && { reuse }) }, traffic, codec?.calibration.bits);
    this.secureRound = { round, sum, members: new Set(members) };
    for (const answered of answers) {
      void answered.then(({ member, answer }) => {
        if (answer === TRAINED || this.secureRound?.sum !== sum) return;
        const why = typeof answer === "string" ? answer : "sent its update in the clear (refused, not read)";
        log(`round ${round}: ${member.id} dropped out of the secure sum: ${why}`);
        sum.drop(member, why);
      });
    }
    let total: Float64Array | Float32Array;
    let survivors: number;
    let recovered: number;
    try {
      const result = await sum.result().catch((error: unknown) => {
        if (error instanceof SumDiscarded) traffic.discarded = 1;
        throw error;
      });
      survivors = result.clients;
      this.keysForReuse = sum.reusable();
      recovered = [...result.droppedAt.values()].filter((step) => step === "unmask").length;
      total = codec === undefined ? result.sum : codec.decode(new Int32Array(result.quantizedSum.buffer, result.quantizedSum.byteOffset, result.quantizedSum.length), result.clients);
    } finally {
      this.secureRound = undefined;
      // Tasks still open end here: a member the sum went on without, or a "trained" still on its way from a survivor.
      this.settle(round, "the secure sum ended without its answer");
    }
    // The sum holds the survivors' accumulators only: those that left during SecAgg+ are dropped, not merged;
    // those that left after their masked input are merged (recovered) and dropped both.
    traffic.merged = survivors;
    traffic.dropped = cohort - survivors + recovered;
    const out = new Map<string, tf.Tensor>();
    let offset = 0;
    for (const [name, type] of expected) {
      const size = type.shape.reduce((a, b) => a * b, 1);
      // A plain loop: Float32Array.from with a mapping function took 24-34 ms for the 2NN's 199,210 values, against 1-2 ms.
      const values = new Float32Array(size);
      for (let i = 0; i < size; i++) values[i] = total[offset + i]! / scale;
      out.set(name, tf.tensor(values, [...type.shape], "float32"));
      offset += size;
    }
    return out;
  }

  /** Ends the tasks of `round` still in flight: their answers no longer count. */
  private settle(round: number, why: string): void {
    for (const [id, task] of this.pending) {
      if (task.round !== round) continue;
      this.pending.delete(id);
      task.resolve(why);
    }
  }

  /** Sends a task and waits for its answer until the deadline. */
  private await(task: string, member: Member, round: number, send: () => void): Promise<Answer> {
    return new Promise((resolve) => {
      // A member that left while its part compiled cannot answer: it fails now, not at the deadline.
      if (member.socket.readyState !== member.socket.OPEN) return resolve("disconnected");
      const timer = setTimeout(() => {
        this.pending.delete(task);
        resolve(`no answer within ${this.settings.deadlineMs / 1000} s`);
      }, this.settings.deadlineMs);
      this.pending.set(task, {
        member,
        round,
        resolve: (result) => {
          clearTimeout(timer);
          resolve(result);
        },
      });
      send();
    });
  }
}

/** The round's shared inputs as host values for a record (tensors read from the device; numbers as they are). */
async function sharedRecord(names: readonly string[], shared: ReadonlyMap<string, unknown>): Promise<Map<string, RecordValue>> {
  const out = new Map<string, RecordValue>();
  for (const name of names) {
    const value = shared.get(name);
    if (typeof value === "number") out.set(name, value);
    else if (value instanceof tf.Tensor) {
      const data = await value.data();
      out.set(name, { dtype: value.dtype as RecordTensor["dtype"], shape: value.shape, data: value.dtype === "bool" ? Uint8Array.from(data) : (data as Float32Array | Int32Array) });
    } else {
      const host = value as { shape: readonly number[]; data: Float32Array | Int32Array | Uint8Array };
      out.set(name, { dtype: host.data instanceof Float32Array ? "float32" : host.data instanceof Int32Array ? "int32" : "bool", shape: host.shape, data: host.data });
    }
  }
  return out;
}

/**
 * Row `position` of each state input the runner gave ([cohort, ...]: the state a client never
 * seen starts from, as the server knows none other), as `initial:<input>` entries [1, ...].
 */
function initialState(state: readonly { readonly input: string }[], shared: ReadonlyMap<string, unknown>, position: number): Map<string, RecordValue> {
  return new Map(
    state.map(({ input }) => {
      const { shape, data } = shared.get(input) as { shape: readonly number[]; data: Float32Array };
      const size = data.length / shape[0]!;
      return [`initial:${input}`, { dtype: "float32", shape: [1, ...shape.slice(1)], data: data.slice(position * size, (position + 1) * size) }] as const;
    }),
  );
}

/** Why an update is not the accumulator the program's types say (names, dtypes, shapes, finite values); undefined when it is. */
export function accumulatorProblem(update: ReadonlyMap<string, RecordValue>, expected: ReadonlyMap<string, { readonly dtype: string; readonly shape: readonly number[] }>): string | undefined {
  if (update.size !== expected.size) return `an update of ${update.size} values where the accumulator has ${expected.size}`;
  for (const [name, type] of expected) {
    const value = update.get(name);
    if (value === undefined) return `an update without ${name}`;
    if (typeof value === "number") return `${name} is a number where a ${type.dtype} tensor is expected`;
    if (value.dtype !== type.dtype) return `${name} is ${value.dtype} where the program's type is ${type.dtype}`;
    if (value.shape.length !== type.shape.length || value.shape.some((d, i) => d !== type.shape[i])) return `${name} has shape [${value.shape.join(", ")}] where the program's type is [${type.shape.join(", ")}]`;
    if (value.dtype === "float32" && !(value.data as Float32Array).every(Number.isFinite)) return `${name} holds NaN or infinite values`;
  }
  return undefined;
}
