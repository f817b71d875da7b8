/**
 * The server's side of one SecAgg+ round: it drives the five steps, routes the sealed shares
 * (it holds no channel key, so it cannot open them), sums the masked vectors as they arrive
 * (keeping only the running sum), tracks who dropped at which step, and at the end rebuilds
 * each survivor's self-mask seed and each dropped client's masking key from threshold-many
 * shares, removes the masks and dequantizes. The neighbour graph is not its choice: it follows
 * from the signed key list it forwards (graph.ts), and before anyone unmasks, the survivors sign
 * the survivor set it announced and it forwards their signatures (the consistency check).
 *
 * Transport-agnostic: the transport calls start() for the setup messages, receive(client, raw)
 * for every message that arrives (the client id is the one the transport authenticated), and
 * advance() when every expected client has answered (pending() is empty) or the step's deadline
 * has passed; advance() returns the next step's messages, the result, or an abort. A refused
 * message is logged (FT336) and the round goes on; with fewer than reconstruction_threshold
 * clients at a step, or a secret that cannot be rebuilt, the round aborts (FT337), discards the
 * masked sum and reveals nothing.
 *
 * Key reuse (reuse.ts): reusable() after a round in which every client of the key list signed
 * the whole list as survivors; the next round's server, given it as options.reuse with the same
 * cohort, sends setups that name it and collects the masked inputs at once.
 */
import { ftError } from "../../errors/error.js";
import { fromBase64, toBase64 } from "./codec.js";
import type { SecAggEvent, SecAggLog } from "./events.js";
import { graphSeed, publicGraph, type NeighbourGraph } from "./graph.js";
import { PROTOCOL, TAG_BYTES } from "./keys.js";
import { type IdentityPins, keysTranscript, survivorsTranscript, verifyTranscript } from "./identity.js";
import {
  type ClientMessage,
  type ConsistencyCheckRequest,
  type MaskedInputRequest,
  type Setup,
  type ShareKeysRequest,
  type UnmaskRequest,
  clientIdSchema,
  messageSizeLimit,
  parseClientMessage,
} from "./messages.js";
import { type ResolvedSecAggParams, type SecAggParams, degreeOf, resolveSecAggParams } from "./params.js";
import { addMod, dequantizeSum, outsideHonestRange } from "./quantize.js";
import { type ReusedKeys, reuseMisfit } from "./reuse.js";
import { sharePackBytes } from "./shares.js";
import { type RandomBytes, webCryptoRandomBytes } from "./random.js";
import { type Advertised, type SharedKeys, type UnmaskShares, checkUnmask, removeMasks } from "./unmask.js";

/** The step the server is collecting answers for, or how the round ended. */
export type ServerStep = "setup" | CollectingStep | "done" | "aborted";
export type CollectingStep = "advertise-keys" | "share-keys" | "masked-input" | "consistency-check" | "unmask";
/** The steps up to the masked input: who answers them can still be in the sum. */
const sumMembersFixedBy = (step: CollectingStep): boolean => step === "advertise-keys" || step === "share-keys" || step === "masked-input";
type StepRequest = ShareKeysRequest | MaskedInputRequest | ConsistencyCheckRequest | UnmaskRequest;

export interface SecAggServerOptions {
  readonly randomBytes?: RandomBytes;
  readonly log?: SecAggLog;
  /**
   * The clients send vectors already in Z_M (SecAggClient's Uint32Array path: distributed DP's
   * codec), whose sum wraps by design. Otherwise they send quantized floats, each word in
   * [0, quantization_range], and a sum outside [0, n x quantization_range] is discarded (FT355).
   */
  readonly preQuantized?: boolean;
  /**
   * The identity keys the server pinned by client id, across its rounds (trust on first use): a
   * client whose advertised keys are signed under another identity is refused at advertise-keys,
   * so its neighbours never see keys their own pins would refuse (a client restarted without its
   * identity key file stays out of this server's secure rounds, with a logged reason).
   */
  readonly pins?: IdentityPins;
  /** The last round's key setup (its server's reusable()): reused when this round's cohort and parameters fit it, else a full setup. */
  readonly reuse?: ReusedKeys;
}

export type Verdict = { readonly accepted: true } | { readonly accepted: false; readonly reason: string };

export interface SecAggResult {
  readonly round: number;
  /** The dequantized sum of the included clients' clipped vectors. */
  readonly sum: Float64Array;
  /** The exact modular sum of their quantized vectors. */
  readonly quantizedSum: Uint32Array;
  /** How many clients the sum contains, and which. */
  readonly clients: number;
  readonly included: readonly string[];
  /** The clients that left, by the step they did not answer. */
  readonly droppedAt: ReadonlyMap<string, CollectingStep>;
}

export type StepOutcome =
  | { readonly kind: "messages"; readonly step: CollectingStep; readonly messages: ReadonlyMap<string, StepRequest> }
  | { readonly kind: "done"; readonly result: SecAggResult }
  | { readonly kind: "aborted"; readonly reason: string; readonly code: "FT337" | "FT355" };

export class SecAggServer {
  readonly params: ResolvedSecAggParams;
  readonly clients: readonly string[];
  /** This setup's session id (fresh random bytes): a server restarted mid-round sets the round up again under a new one. */
  readonly session: string;
  readonly events: SecAggEvent[] = [];
  private currentStep: ServerStep = "setup";
  private readonly randomBytes: RandomBytes;
  private readonly sink: SecAggLog;
  private graph: NeighbourGraph = new Map();
  /** Who is expected to answer the current step. */
  private expected = new Set<string>();
  private readonly maskedFrom = new Set<string>();
  private readonly unmasked = new Map<string, UnmaskShares>();
  /** The survivor set announced at the consistency check (U3, in id order), and who signed it (U4) with what. */
  private announced: string[] = [];
  private readonly signed = new Map<string, string>();
  /** What each unmask request asked of each client. */
  private readonly asked = new Map<string, { survivors: Set<string>; dropped: Set<string> }>();
  private runningSum: Uint32Array;
  private readonly droppedAt = new Map<string, CollectingStep>();
  private abortReason: string | null = null;
  private readonly preQuantized: boolean;
  private readonly pins: IdentityPins | undefined;
  /** The key setup this round reuses, or why it could not (logged at start). */
  private readonly reusing: ReusedKeys | undefined;
  private readonly fullSetupBecause: string | undefined;
  private advertised = new Map<string, Advertised>();
  private shared = new Map<string, SharedKeys>();

  constructor(params: SecAggParams, clients: readonly string[], options: SecAggServerOptions = {}) {
    const ids = new Set(clients);
    if (ids.size !== clients.length) throw ftError("FT335", { what: "cohort", why: "a client id is listed twice" });
    for (const id of clients) if (!clientIdSchema.safeParse(id).success) throw ftError("FT335", { what: "cohort", why: `client id ${JSON.stringify(id)} is not 1-128 characters of A-Z a-z 0-9 _ . : @ -` });
    this.params = resolveSecAggParams(params, clients.length);
    this.clients = clients.slice();
    this.randomBytes = options.randomBytes ?? webCryptoRandomBytes;
    this.session = Array.from(this.randomBytes(16), (b) => b.toString(16).padStart(2, "0")).join("");
    this.sink = options.log ?? (() => {});
    this.preQuantized = options.preQuantized ?? false;
    this.pins = options.pins;
    this.runningSum = new Uint32Array(this.params.vector_length);
    this.fullSetupBecause = options.reuse && reuseMisfit(options.reuse, this.params, this.clients);
    this.reusing = options.reuse !== undefined && this.fullSetupBecause === undefined ? options.reuse : undefined;
    if (this.reusing !== undefined) {
      this.advertised = new Map(this.reusing.advertised);
      this.shared = new Map(this.reusing.shared);
      this.graph = this.reusing.graph;
    }
  }

  /** The session and round of the setup whose keys this round masks with. */
  private get keysSetup(): { session: string; round: number } {
    return this.reusing ?? { session: this.session, round: this.params.round };
  }

  /**
   * This round's key setup for the next round, when that round may reuse it: the round is done,
   * every client of the key list is in the survivor set and signed it, and the window has rounds left.
   */
  reusable(): ReusedKeys | undefined {
    const listed = this.advertised.size;
    if (this.currentStep !== "done" || this.announced.length !== listed || this.signed.size !== listed) return undefined;
    const { session, round } = this.keysSetup;
    if (this.params.round + 1 - round >= this.params.key_rounds) return undefined;
    return { session, round, params: this.params, advertised: this.advertised, shared: this.shared, graph: this.graph, lastRound: this.params.round, signatures: new Map(this.signed) };
  }

  get step(): ServerStep {
    return this.currentStep;
  }

  /** The clients that have not answered the current step yet. */
  pending(): string[] {
    return [...this.expected];
  }

  /** Why the round aborted, or null. */
  get aborted(): string | null {
    return this.abortReason;
  }

  /**
   * The setup message for every client; the server then collects the advertised keys, or, when
   * it reuses a key setup, the masked inputs (the setup carries every client's signature over
   * the last survivor set, which each client checks before it reuses its keys).
   */
  start(): Map<string, Setup> {
    if (this.currentStep !== "setup") throw ftError("FT338", { client: "server", why: "start() called twice" });
    const keys = this.reusing;
    this.currentStep = keys === undefined ? "advertise-keys" : "masked-input";
    this.expected = new Set(this.clients);
    const setup = keys === undefined ? `full setup${this.fullSetupBecause === undefined ? "" : ` (not reusing keys: ${this.fullSetupBecause})`}` : `reusing the key setup of round ${keys.round}`;
    this.emit("info", `round starts with ${this.clients.length} clients (num_shares ${this.params.num_shares}, reconstruction_threshold ${this.params.reconstruction_threshold}, min_clients ${this.params.min_clients}), ${setup}`);
    const reuse = keys && { keys_session: keys.session, keys_round: keys.round, signatures: [...keys.signatures].map(([id, signature]) => ({ id, signature })) };
    return new Map(this.clients.map((to) => [to, { protocol: PROTOCOL, round: this.params.round, step: "setup", to, session: this.session, params: this.params, ...(reuse && { reuse }) }]));
  }

  /**
   * Takes one raw message from the client the transport authenticated as `sender`. A message
   * that is oversized, malformed, from another round or step, replayed, claims another sender,
   * or whose content is wrong, is refused with a logged reason; the round goes on.
   */
  receive(sender: string, raw: Uint8Array): Verdict {
    const step = this.currentStep;
    // A client's lists are per neighbour; only the masked input is longer.
    const limit = step === "masked-input" ? messageSizeLimit(this.params) : messageSizeLimit({ vector_length: 1, num_shares: this.params.num_shares, key_rounds: this.params.key_rounds });
    const parsed = parseClientMessage(raw, limit);
    if (!parsed.ok) return this.refuse(step, sender, parsed.reason);
    const m = parsed.message;
    if (m.round !== this.params.round) return this.refuse(m.step, sender, `out of round: it is for round ${m.round}, this is round ${this.params.round}`);
    if (m.from !== sender) return this.refuse(m.step, sender, `it claims to come from ${m.from}`);
    if (step === "setup" || step === "done" || step === "aborted") return this.refuse(m.step, sender, `the round is not collecting messages (${step})`);
    if (m.step !== step) return this.refuse(m.step, sender, `out of step: the server is collecting ${step}`);
    if (!this.clients.includes(sender)) return this.refuse(m.step, sender, "not in this round's cohort");
    if (!this.expected.has(sender)) {
      const dropped = this.droppedAt.get(sender);
      return this.refuse(m.step, sender, dropped ? `it dropped at ${dropped}` : `replayed: ${step} already answered`);
    }
    const why = this.accept(m);
    if (why !== null) return this.refuse(m.step, sender, why);
    this.expected.delete(sender);
    return { accepted: true };
  }

  /**
   * The transport gives up on `client` at the current step (it sent a message that was refused,
   * and it answers each step once): the step no longer waits for it, and it is a dropout there.
   * False when the client was not expected at this step.
   */
  exclude(client: string, why: string): boolean {
    if (!this.expected.delete(client)) return false;
    this.droppedAt.set(client, this.currentStep as CollectingStep);
    this.emit("warn", `dropped: ${why}`, client);
    return true;
  }

  /** Closes the current step (all answered, or its deadline passed) and moves to the next. */
  async advance(): Promise<StepOutcome> {
    const step = this.currentStep;
    if (step === "setup" || step === "done" || step === "aborted") throw ftError("FT338", { client: "server", why: `advance() at ${step}` });
    for (const id of this.expected) {
      this.droppedAt.set(id, step);
      this.emit("warn", `dropped: no ${step} message before the step closed`, id);
    }
    const answered = this.answeredAt(step);
    const t = this.params.reconstruction_threshold;
    if (answered.length < t) return this.abort(step, `${answered.length} clients answered ${step}, reconstruction_threshold is ${t}`);
    // The promised minimum (distributed DP's noise is calibrated for that many): with fewer, no
    // unmask step, so no smaller sum is ever learnt. The sum holds the masked inputs, so the
    // count that matters is the masked-input step's; a client lost after it is still in the sum,
    // recovered from its neighbours' shares, and the later steps need only the threshold.
    if (sumMembersFixedBy(step) && answered.length < this.params.min_clients) return this.abort(step, `${answered.length} clients answered ${step}, fewer than the ${this.params.min_clients} a sum must hold (min_clients): no unmask step, so the sum is never learnt`);
    switch (step) {
      case "advertise-keys":
        return this.sendShareKeys(answered);
      case "share-keys":
        return this.sendMaskedInput(answered);
      case "masked-input":
        return this.sendConsistencyCheck(answered);
      case "consistency-check":
        return this.sendUnmask(answered);
      case "unmask":
        return this.finish();
    }
  }

  private answeredAt(step: CollectingStep): string[] {
    const got = { "advertise-keys": this.advertised, "share-keys": this.shared, "masked-input": this.maskedFrom, "consistency-check": this.signed, unmask: this.unmasked }[step];
    return this.clients.filter((id) => got.has(id));
  }

  /** Every client gets the whole signed key list and its graph seed, and derives its own neighbours from them. */
  private sendShareKeys(u1: readonly string[]): StepOutcome {
    const roster = [...u1].sort().map((id) => {
      const a = this.advertised.get(id)!;
      return { id, encryption_key: a.encryptionKey, masking_key: toBase64(a.maskingKey), identity_key: a.identityKey, signature: a.signature };
    });
    const seed = graphSeed(this.session, this.params.round, roster);
    this.graph = publicGraph(u1, Math.min(degreeOf(this.params), u1.length - 1), seed);
    const messages = new Map<string, ShareKeysRequest>();
    for (const to of u1) messages.set(to, { protocol: PROTOCOL, round: this.params.round, step: "share-keys", to, roster, graph_seed: seed });
    return this.next("share-keys", messages);
  }

  private sendMaskedInput(u2: readonly string[]): StepOutcome {
    const messages = new Map<string, MaskedInputRequest>();
    for (const to of u2) {
      const shares = [...this.graph.get(to)!]
        .filter((from) => this.shared.has(from))
        .map((from) => ({ from, ...this.shared.get(from)!.sealed.get(to)! }));
      messages.set(to, { protocol: PROTOCOL, round: this.params.round, step: "masked-input", to, shares });
    }
    return this.next("masked-input", messages);
  }

  /** One survivor set for all: the clients whose masked vectors are in the running sum. */
  private sendConsistencyCheck(u3: readonly string[]): StepOutcome {
    this.announced = [...u3].sort();
    const messages = new Map<string, ConsistencyCheckRequest>();
    for (const to of u3) messages.set(to, { protocol: PROTOCOL, round: this.params.round, step: "consistency-check", to, survivors: this.announced });
    return this.next("consistency-check", messages);
  }

  /** Each client that signed gets its own and its neighbours' signatures, and is asked for what the signed set implies. */
  private sendUnmask(u4: readonly string[]): StepOutcome {
    const messages = new Map<string, UnmaskRequest>();
    for (const to of u4) {
      const around = [...this.graph.get(to)!].filter((id) => this.shared.has(id));
      this.asked.set(to, { survivors: new Set([to, ...around.filter((id) => this.maskedFrom.has(id))]), dropped: new Set(around.filter((id) => !this.maskedFrom.has(id))) });
      const signatures = [to, ...around].filter((id) => this.signed.has(id)).map((id) => ({ id, signature: this.signed.get(id)! }));
      messages.set(to, { protocol: PROTOCOL, round: this.params.round, step: "unmask", to, signatures });
    }
    return this.next("unmask", messages);
  }

  private async finish(): Promise<StepOutcome> {
    const survivors = this.clients.filter((id) => this.maskedFrom.has(id));
    const removed = await removeMasks({
      params: this.params,
      keysSession: this.keysSetup.session,
      keysRound: this.keysSetup.round,
      graph: this.graph,
      survivors,
      droppedAfterSharing: this.clients.filter((id) => this.shared.has(id) && !this.maskedFrom.has(id)),
      shared: this.shared,
      advertised: this.advertised,
      unmasked: this.unmasked,
      sum: this.runningSum,
      log: (message, client) => this.emit("warn", message, client, "FT336"),
    });
    if (!removed.ok) return this.abort("unmask", removed.reason);
    const outside = this.preQuantized ? undefined : outsideHonestRange(this.runningSum, survivors.length, this.params.quantization_range);
    if (outside !== undefined) return this.discard(survivors.length, outside);
    this.currentStep = "done";
    const result: SecAggResult = {
      round: this.params.round,
      sum: dequantizeSum(this.runningSum, survivors.length, this.params),
      quantizedSum: this.runningSum.slice(),
      clients: survivors.length,
      included: survivors,
      droppedAt: new Map(this.droppedAt),
    };
    this.emit("info", `sum of ${survivors.length} clients (${this.droppedAt.size} dropped)`);
    return { kind: "done", result };
  }

  private next(step: CollectingStep, messages: ReadonlyMap<string, StepRequest>): StepOutcome {
    this.currentStep = step;
    this.expected = new Set(messages.keys());
    return { kind: "messages", step, messages };
  }

  /** Checks one parsed message's content against what the server sent; null if it is accepted. */
  private accept(m: ClientMessage): string | null {
    switch (m.step) {
      case "advertise-keys": {
        const encryptionKey = m.encryption_key;
        const maskingKey = fromBase64(m.masking_key)!;
        const transcript = keysTranscript(this.session, this.params.round, m.from, fromBase64(encryptionKey)!, maskingKey);
        if (!verifyTranscript(fromBase64(m.identity_key)!, transcript, fromBase64(m.signature)!)) return "its keys do not carry its identity key's signature for this session and round";
        if (this.pins !== undefined && !this.pins.check(m.from, m.identity_key))
          return "its identity key is not the one this server pinned for it (a client restarted without --identity-key keeps out of secure rounds until the server restarts)";
        for (const other of this.advertised.values())
          if (other.encryptionKey === encryptionKey || toBase64(other.maskingKey) === m.masking_key) return "it reuses another client's public key";
        this.advertised.set(m.from, { encryptionKey, maskingKey, identityKey: m.identity_key, signature: m.signature });
        return null;
      }
      case "share-keys": {
        const roster = this.graph.get(m.from)!;
        const sealed = new Map(m.shares.map((s) => [s.to, { nonce: s.nonce, ciphertext: s.ciphertext }]));
        if (sealed.size !== m.shares.length || sealed.size !== roster.size || [...roster].some((id) => !sealed.has(id)))
          return "its shares are not one per neighbour the server listed";
        const k = this.params.key_rounds;
        if (m.seed_commitments.length !== k) return `${m.seed_commitments.length} seed commitments, key_rounds is ${k}`;
        if (m.shares.some((s) => fromBase64(s.ciphertext)?.length !== sharePackBytes(k) + TAG_BYTES)) return `a sealed share pack is not the ${sharePackBytes(k) + TAG_BYTES} bytes of ${k} seed shares and a key share`;
        this.shared.set(m.from, { seedCommitments: m.seed_commitments.map((c) => fromBase64(c)!), sealed });
        return null;
      }
      case "masked-input": {
        if (m.length !== this.params.vector_length) return `masked vector of length ${m.length}, the round's is ${this.params.vector_length}`;
        // Its byte count matched its length at parsing (messages.ts).
        const words = m.vector;
        const modulus = this.params.modulus_range;
        if (modulus < 2 ** 32 && words.some((w) => w >= modulus)) return `masked vector has words outside [0, ${modulus})`;
        addMod(this.runningSum, words, 1, modulus);
        this.maskedFrom.add(m.from);
        // Logged: an operator (and the kill -9 test) sees who can still be recovered if it leaves now.
        this.emit("info", "masked input received", m.from);
        return null;
      }
      case "consistency-check": {
        // Checked here too, so that one client's bad signature cannot make its honest neighbours abort.
        const identityKey = fromBase64(this.advertised.get(m.from)!.identityKey)!;
        if (!verifyTranscript(identityKey, survivorsTranscript(this.session, this.params.round, this.announced), fromBase64(m.signature)!)) return "its signature does not verify over the survivor set";
        this.signed.set(m.from, m.signature);
        return null;
      }
      case "unmask": {
        const shares = checkUnmask(m, this.asked.get(m.from)!, this.reusing !== undefined);
        if (typeof shares === "string") return shares;
        this.unmasked.set(m.from, shares);
        return null;
      }
    }
  }

  private abort(step: CollectingStep, why: string): StepOutcome {
    this.runningSum.fill(0);
    this.emit("error", ftError("FT337", { round: this.params.round, step, why }).message, undefined, "FT337");
    this.currentStep = "aborted";
    this.abortReason = why;
    return { kind: "aborted", reason: why, code: "FT337" };
  }

  /** The unmasked sum is one no honest cohort can produce: it is dropped, never returned (FT355). */
  private discard(clients: number, why: string): StepOutcome {
    this.runningSum.fill(0);
    const message = ftError("FT355", { round: this.params.round, clients, why }).message;
    this.emit("error", message, undefined, "FT355");
    this.currentStep = "aborted";
    this.abortReason = message;
    return { kind: "aborted", reason: message, code: "FT355" };
  }

  private refuse(step: string, sender: string, why: string): Verdict {
    this.emit("warn", ftError("FT336", { step, sender, why }).message, sender, "FT336");
    return { accepted: false, reason: why };
  }

  private emit(level: SecAggEvent["level"], message: string, client?: string, code?: SecAggEvent["code"]): void {
    const event: SecAggEvent = { level, round: this.params.round, step: this.currentStep, message, ...(client === undefined ? {} : { client }), ...(code === undefined ? {} : { code }) };
    this.events.push(event);
    this.sink(event);
  }
}
