/**
 * `fedtensor serve --aggregator secure`: the round's partial accumulators are summed with
 * SecAgg+ (src/deploy/secagg) among the cohort's members, whose key setup runs while they
 * train (tasks.ts), so the server learns the sum of those that trained only, never one client's
 * accumulator, and holds no pair secret. Each member multiplies its accumulator (all linear
 * sums for the weighted-mean algorithms) by the round's public scale (1 / the largest example
 * count in the cohort) so that its values fit SecAgg+'s clipping range; the server divides the dequantized sum by it. Dropouts after the masked input are
 * recovered from the neighbours' shares; with too few clients left the round aborts and
 * nothing is revealed.
 */
import { encodeFrame } from "../protocol/frame.js";
import { WIRE_VERSION } from "../protocol/messages.js";
import { FedTensorError, ftError } from "../../errors/error.js";
import { defaultNumShares, encodeMessage, majorityThreshold, resolveNumShares, resolveThreshold, SECAGG_DEFAULTS, SecAggServer, sumFits, type CollectingStep, type IdentityPins, type ReusedKeys, type SecAggParams, type SecAggResult } from "../secagg/index.js";
import type { Member } from "./clients.js";
import { RoundAborted, SumDiscarded } from "./round-aborted.js";

/**
 * `fedtensor serve --num-shares --reconstruction-threshold`, as Flower's SecAggPlusWorkflow
 * takes them: a count, or a proportion in (0, 1] (of the cohort for num_shares, of num_shares
 * for the threshold). Absent: about 2 log2 n + 1 shares, and a strict majority of them.
 */
export interface ShareSettings {
  readonly num_shares?: number;
  readonly reconstruction_threshold?: number;
  /** `--key-rounds`: rounds one key setup serves (SecAgg+'s key_rounds; 1, the default, is no reuse). */
  readonly key_rounds?: number;
}

/**
 * `fedtensor serve --clipping-range --quantization-range --modulus-range` (Flower's
 * clipping_range, quantization_range, modulus_range) for the float path of --aggregator secure;
 * each one absent is Flower's default (SECAGG_DEFAULTS).
 */
export interface RangeSettings {
  readonly clipping_range?: number;
  readonly quantization_range?: number;
  readonly modulus_range?: number;
}

export interface SecureSumSettings {
  readonly deadlineMs: number;
  readonly shares?: ShareSettings;
  readonly ranges?: RangeSettings;
  readonly log: (line: string) => void;
  /**
   * The fewest clients the sum may hold (--min-clients; distributed DP's noise is calibrated for
   * it), announced in the setup as min_clients: with fewer at any step the round aborts before
   * unmasking, and each client refuses a smaller cohort (FT372).
   */
  readonly minClients?: number;
  /** The clients' identity keys, pinned across this server's rounds (SecAggServerOptions.pins). */
  readonly pins?: IdentityPins;
  /** The last secure round's key setup, if it may serve this round (SecAggServer.reusable()). */
  readonly reuse?: ReusedKeys;
}

/** The share counts of a cohort of `clients` clients (FT335 when the settings do not fit it). */
export function shareCounts(settings: ShareSettings, clients: number): { num_shares: number; reconstruction_threshold: number } {
  const shares = resolveNumShares(settings.num_shares ?? defaultNumShares(clients), clients);
  // A strict majority of the shares rebuilds a secret (params.ts says why).
  return { num_shares: shares, reconstruction_threshold: resolveThreshold(settings.reconstruction_threshold ?? majorityThreshold(shares), shares) };
}

/**
 * Checks at start-up that the share settings fit every cohort a secure round can have, from
 * `smallest` (--min-clients, at least 2) to `largest` (--clients-per-round) clients, so that no
 * round fails on its parameters (FT341, with the first cohort size they do not fit).
 */
export function checkShareSettings(settings: ShareSettings, smallest: number, largest: number): void {
  if (settings.num_shares === undefined && settings.reconstruction_threshold === undefined) return;
  for (let clients = Math.max(2, smallest); clients <= Math.max(2, largest); clients++) {
    try {
      shareCounts(settings, clients);
    } catch (error) {
      // FT335's own fields say what does not fit; anything else is not about the settings.
      if (!(error instanceof FedTensorError) || error.code !== "FT335") throw error;
      const why = `${error.params["what"]}: ${error.params["why"]}`;
      throw ftError("FT341", { numShares: String(settings.num_shares ?? "default"), threshold: String(settings.reconstruction_threshold ?? "default"), clients, why });
    }
  }
}

/** The ranges of the float path: the settings over Flower's defaults. */
export const rangesOf = (settings: RangeSettings = {}): Pick<SecAggParams, "clipping_range" | "quantization_range" | "modulus_range"> => ({
  clipping_range: settings.clipping_range ?? SECAGG_DEFAULTS.clipping_range,
  quantization_range: settings.quantization_range ?? SECAGG_DEFAULTS.quantization_range,
  modulus_range: settings.modulus_range ?? SECAGG_DEFAULTS.modulus_range,
});

/**
 * Checks at start-up that the largest cohort's sum cannot wrap: --clients-per-round times
 * quantization_range must stay below modulus_range (FT342), or every round of that size would
 * fail on its parameters (FT335). Smaller cohorts then fit too.
 */
export function checkRangeSettings(settings: RangeSettings, largest: number): void {
  const { quantization_range, modulus_range } = rangesOf(settings);
  const clients = Math.max(2, largest);
  if (!sumFits(clients, quantization_range, modulus_range)) {
    // The largest Q that fits this cohort under this M: the usual fix, as M is at most 2^32.
    const fits = Math.floor((modulus_range - 1) / clients);
    const others = "raise --modulus-range (at most 2^32) or lower --clients-per-round";
    const change = fits >= 1 ? `lower --quantization-range to at most ${fits}, ${others}` : `no --quantization-range fits: ${others}`;
    throw ftError("FT342", { clients, quantization: quantization_range, modulus: modulus_range, change });
  }
}

/** The parameters of a round of `clients` clients summing vectors of `length`. */
export function secureParams(round: number, length: number, clients: number, modulusBits?: number, shares: ShareSettings = {}, rangeSettings: RangeSettings = {}, minClients?: number): SecAggParams {
  // Pre-quantized inputs (distributed DP's codec) in Z_(2^bits): the clipping and quantization ranges are not used.
  const ranges = modulusBits === undefined ? rangesOf(rangeSettings) : { clipping_range: 1, quantization_range: 1, modulus_range: 2 ** modulusBits };
  return { round, vector_length: length, ...shareCounts(shares, clients), ...ranges, ...(minClients === undefined ? {} : { min_clients: minClients }), ...(shares.key_rounds === undefined ? {} : { key_rounds: shares.key_rounds }) };
}

/**
 * What became of a member that left at each step, for the round's log line: only one that left
 * at unmask has its input in the sum; before its masked input it is left out, its pair masks
 * (after share-keys) removed with its key rebuilt from its neighbours' shares.
 */
const DROPPED_AT: Readonly<Record<CollectingStep, string>> = {
  "advertise-keys": "left out before it shared keys: nothing to recover",
  "share-keys": "left out before it shared keys: nothing to recover",
  "masked-input": "not in the sum: its pair masks removed with its key rebuilt from its neighbours' shares",
  "consistency-check": "its masked input is in the sum: its self mask removed with its seed rebuilt from its neighbours' shares",
  unmask: "its masked input is in the sum: its self mask removed with its seed rebuilt from its neighbours' shares",
};

/** Bytes of SecAgg+ traffic in a round, for the metrics. */
export interface SecureTraffic {
  bytesOut: number;
  bytesIn: number;
}

/** One SecAgg+ round over `members`; the transport routes their secagg messages to `receive`. */
export class SecureSum {
  private readonly server: SecAggServer;
  /** The members by id: looked up for every send and, on every message, for each pending member. */
  private readonly byId: ReadonlyMap<string, Member>;
  private wake: (() => void) | undefined;
  /** The members dropped for a failed task: not waited for at any step. */
  private readonly dropped = new Set<string>();

  constructor(
    private readonly round: number,
    members: readonly Member[],
    length: number,
    private readonly settings: SecureSumSettings,
    private readonly traffic: SecureTraffic,
    /** Set for pre-quantized inputs mod 2^modulusBits (distributed DP); the caller reads result().quantizedSum. */
    modulusBits?: number,
  ) {
    this.byId = new Map(members.map((m) => [m.id, m]));
    this.server = new SecAggServer(secureParams(round, length, members.length, modulusBits, settings.shares, settings.ranges, settings.minClients), members.map((m) => m.id), {
      preQuantized: modulusBits !== undefined,
      ...(settings.pins === undefined ? {} : { pins: settings.pins }),
      ...(settings.reuse === undefined ? {} : { reuse: settings.reuse }),
      log: (event) => settings.log(`round ${round} secagg ${event.step}${event.client === undefined ? "" : ` ${event.client}`}: ${event.code === undefined || event.message.startsWith(event.code) ? "" : `${event.code} `}${event.message}`),
    });
  }

  /** A secagg message from a member: refused ones are logged by the protocol and change nothing. */
  receive(member: Member, body: Uint8Array): void {
    this.traffic.bytesIn += body.length;
    const verdict = this.server.receive(member.id, body);
    if (!verdict.accepted) {
      this.settings.log(`round ${this.round}: refused a secagg message from ${member.id}: ${verdict.reason}`);
      // A member answers each step once: after a refused answer the step has nothing more to wait for from it.
      this.server.exclude(member.id, `its ${this.server.step} message was refused`);
    }
    // Not only when no one is pending: a member that left is pending too, and the step need not wait for it.
    this.wake?.();
  }

  /** The SecAgg+ step the sum collects (or how it ended) and the members it still waits for: /status shows them. */
  progress(): { step: string; waitingFor: string[] } {
    return { step: this.server.step, waitingFor: this.server.pending() };
  }

  /** This round's key setup for the next secure round, once the sum is done (SecAggServer.reusable()). */
  reusable(): ReusedKeys | undefined {
    return this.server.reusable();
  }

  /** A member left: the step need not wait for it. */
  left(): void {
    this.wake?.();
  }

  /**
   * A member that will send no input (its task failed or timed out): it is dropped at the step
   * that expects it now, and no later step waits for it. Before its masked input that leaves it
   * out of the sum, its pair masks removed with its key rebuilt from its neighbours' shares.
   */
  drop(member: Member, why: string): void {
    this.dropped.add(member.id);
    this.server.exclude(member.id, why);
    this.wake?.();
  }

  /** Runs the five steps; the dequantized sum, or RoundAborted. */
  async sum(): Promise<Float64Array> {
    return (await this.result()).sum;
  }

  /** Runs the five steps; the protocol's result (its quantizedSum is the exact sum mod M), or RoundAborted. */
  async result(): Promise<SecAggResult> {
    const send = (to: string, message: object) => {
      const frame = encodeFrame({ v: WIRE_VERSION, type: "secagg", round: this.round }, encodeMessage(message as never));
      this.traffic.bytesOut += frame.length;
      this.byId.get(to)?.send(frame);
    };
    for (const [to, setup] of this.server.start()) send(to, setup);
    for (;;) {
      await this.stepDone();
      const outcome = await this.server.advance();
      if (outcome.kind === "aborted") throw new (outcome.code === "FT355" ? SumDiscarded : RoundAborted)(`secure aggregation aborted: ${outcome.reason}`);
      if (outcome.kind === "done") {
        const dropped = [...outcome.result.droppedAt].map(([id, step]) => `${id} at ${step} (${DROPPED_AT[step]})`);
        this.settings.log(`round ${this.round}: secure sum of ${outcome.result.clients} clients${dropped.length === 0 ? "" : `; dropped: ${dropped.join(", ")}`}`);
        return outcome.result;
      }
      this.settings.log(`round ${this.round}: secagg ${outcome.step} to ${[...outcome.messages.keys()].join(", ")}`);
      for (const [to, message] of outcome.messages) send(to, message);
    }
  }

  /** Resolves when every expected member that is still connected answered the current step, or at its deadline. */
  private stepDone(): Promise<void> {
    return new Promise((resolve) => {
      const connected = () => this.server.pending().filter((id) => !this.dropped.has(id) && this.byId.get(id)?.socket.readyState === 1);
      if (connected().length === 0) return resolve();
      const timer = setTimeout(done, this.settings.deadlineMs);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.wake = () => {
        if (connected().length === 0) {
          this.wake = undefined;
          done();
        }
      };
    });
  }
}
