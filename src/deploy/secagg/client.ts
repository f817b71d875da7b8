/**
 * One client's side of one SecAgg+ round: a state machine through the five steps, each called
 * once, in order. It checks what the server sends before it acts on it (FT336 otherwise), so a
 * server cannot make it reveal more than the protocol allows: it derives its neighbours from
 * public randomness, hands out, per neighbour, a self-mask seed share or a secret-key share,
 * never both, only for a survivor set that threshold-many of its neighbours signed, and answers
 * the unmask step once. A round that reuses the last key setup (reuse.ts) starts at the masked
 * input, and hands out a dropped neighbour's pair seed of that round instead of a key share.
 */
import { ftError } from "../../errors/error.js";
import { toBase64, fromBase64 } from "./codec.js";
import type { SecAggLog } from "./events.js";
import { type KeyPair, PROTOCOL, eraseSecretKey, newKeyPair, openShares, pairSecret, sealShares, seedCommitment, KEY_BYTES } from "./keys.js";
import { sumOfMasks } from "./masks.js";
import { type Identity, IdentityPins, keysTranscript, newIdentity, signTranscript, survivorsTranscript, verifyTranscript } from "./identity.js";
import {
  type AdvertiseKeys,
  type ClientMessage,
  type ConsistencyCheck,
  type ConsistencyCheckRequest,
  type MaskedInput,
  type MaskedInputRequest,
  type ServerMessage,
  type Setup,
  type ShareKeys,
  type ShareKeysRequest,
  type Unmask,
  type UnmaskRequest,
  SETUP_SIZE_LIMIT,
  messageSizeLimit,
  parseServerMessage,
} from "./messages.js";
import { type ResolvedSecAggParams, checkResolvedParams } from "./params.js";
import { addMod, quantizeVector } from "./quantize.js";
import { type RandomBytes, webCryptoRandomBytes } from "./random.js";
import { type FinishedRound, type HeldShares, type KeySetup, type Neighbour, wipe } from "./reuse.js";
import { checkRoster } from "./roster.js";
import { packShares, splitSecret, unpackShares } from "./shares.js";

export interface SecAggClientOptions {
  /** The CSPRNG (default: WebCrypto's getRandomValues). */
  readonly randomBytes?: RandomBytes;
  readonly log?: SecAggLog;
  /** The client's long-term Ed25519 identity, which signs its round keys (default: a fresh one for this client). */
  readonly identity?: Identity;
  /** The peers' identity keys this client has pinned (default: pins for this client only; SecAggRounds keeps them across rounds). */
  readonly pins?: IdentityPins;
}

/**
 * The client's input, read at the masked-input step only: it may still be training when the key
 * setup runs (fedtensor serve sends the setup with the task), so the step waits for it.
 */
export type VectorSource = () => Float32Array | Uint32Array | Promise<Float32Array | Uint32Array>;

type Stage = "setup" | "advertised" | "shared" | "masked" | "checked" | "unmasked";

/** Between share-keys and the masked input of a setup round: what the client drew and learnt. */
interface Drawn {
  readonly seeds: Uint8Array[];
  readonly ownSeedShares: Uint8Array[];
  readonly neighbours: Map<string, Neighbour>;
  readonly roster: Map<string, Uint8Array>;
}

export class SecAggClient {
  readonly id: string;
  readonly params: ResolvedSecAggParams;
  /** The session of the setup this client answers (SecAggRounds tells a restarted server's setup by it). */
  readonly session: string;
  /** How many values the masked input clipped to [-clipping_range, clipping_range]. */
  clipped = 0;
  private stage: Stage = "setup";
  private readonly randomBytes: RandomBytes;
  private readonly log: SecAggLog;
  private readonly identity: Identity;
  private readonly pins: IdentityPins;
  private encryption: KeyPair | null = null;
  private masking: KeyPair | null = null;
  private drawn: Drawn | null = null;
  /** The key setup this round masks with: made by this client's setup round, or reused from an earlier round's. */
  private keys: KeySetup | null = null;
  /** The survivor set this client signed (U3), and whether its key setup may serve a later round. */
  private survivors: ReadonlySet<string> | null = null;
  private reusable = false;

  /** A client from the server's setup message (raw or parsed); its parameters are checked (FT335). */
  static fromSetup(setup: Setup | Uint8Array, options: SecAggClientOptions = {}): SecAggClient {
    let message: Setup;
    if (setup instanceof Uint8Array) {
      const parsed = parseServerMessage(setup, SETUP_SIZE_LIMIT);
      if (!parsed.ok) throw ftError("FT336", { step: "setup", sender: "the server", why: parsed.reason });
      if (parsed.message.step !== "setup") throw ftError("FT336", { step: parsed.message.step, sender: "the server", why: "expected the setup message" });
      message = parsed.message;
    } else message = setup;
    return new SecAggClient(message.to, checkResolvedParams(message.params), options, message.session);
  }

  /** The client of a round that reuses `keys` (checked by reuse.ts's checkReuse): it starts at the masked input. */
  static reusing(setup: Setup, keys: KeySetup, options: SecAggClientOptions = {}): SecAggClient {
    const client = new SecAggClient(setup.to, checkResolvedParams(setup.params), options, setup.session);
    client.keys = keys;
    client.stage = "shared";
    return client;
  }

  constructor(id: string, params: ResolvedSecAggParams, options: SecAggClientOptions = {}, session = "") {
    this.id = id;
    this.params = checkResolvedParams(params);
    this.session = session;
    this.randomBytes = options.randomBytes ?? webCryptoRandomBytes;
    this.log = options.log ?? (() => {});
    this.identity = options.identity ?? newIdentity(this.randomBytes);
    this.pins = options.pins ?? new IdentityPins();
  }

  /** This round, once its unmask step is answered: what a setup that asks to reuse its keys is checked against. */
  finished(): FinishedRound | undefined {
    if (this.stage !== "unmasked") return undefined;
    return { keys: this.keys!, session: this.session, round: this.params.round, survivors: this.survivors!, usable: this.reusable };
  }

  /** Drops the key setup's secrets: a later round will not reuse them. */
  retire(): void {
    if (this.keys !== null) wipe(this.keys);
    this.reusable = false;
  }

  /**
   * A transport's one call per server message: parses the raw message (size limit, schema;
   * FT336 when it is refused) and answers it with the step it asks for. `vector` is read only
   * for the masked input (a Uint32Array: pre-quantized, see maskedInput).
   */
  async respond(raw: Uint8Array, vector: VectorSource): Promise<ClientMessage> {
    const parsed = parseServerMessage(raw, messageSizeLimit(this.params));
    if (!parsed.ok) this.refuse("unknown", parsed.reason);
    return this.answer(parsed.message, vector);
  }

  /** Answers one parsed server request after the setup (a setup is refused: one per client). */
  async answer(request: ServerMessage, vector: VectorSource): Promise<ClientMessage> {
    switch (request.step) {
      case "setup":
        return this.refuse("setup", "a second setup message in one round");
      case "share-keys":
        return this.shareKeys(request);
      case "masked-input": {
        // The masks depend on keys only: expanded now, while the vector may still be training.
        const mask = this.maskAhead(request);
        try {
          return this.maskedInputWith(request, await vector(), mask);
        } finally {
          mask.fill(0); // also when the training failed
        }
      }
      case "consistency-check":
        return this.consistencyCheck(request);
      case "unmask":
        return this.unmask(request);
    }
  }

  /** Step 1: two fresh X25519 key pairs, the public halves advertised. */
  advertiseKeys(): AdvertiseKeys {
    this.enter("setup", "advertised", "advertise keys");
    this.encryption = newKeyPair(this.randomBytes);
    this.masking = newKeyPair(this.randomBytes);
    const transcript = keysTranscript(this.session, this.params.round, this.id, this.encryption.publicKey, this.masking.publicKey);
    return {
      ...this.header(),
      step: "advertise-keys",
      from: this.id,
      encryption_key: toBase64(this.encryption.publicKey),
      masking_key: toBase64(this.masking.publicKey),
      identity_key: toBase64(this.identity.publicKey),
      signature: toBase64(signTranscript(this.identity, transcript)),
    };
  }

  /**
   * Step 2: given the signed key list of every client that advertised keys, the client checks
   * every signature (FT357), derives the round's neighbour graph from the list (graph.ts; a
   * request whose graph seed differs is FT371) and takes its own neighbours from it. It then
   * draws one self-mask seed per round of the key window (key_rounds), splits each and its
   * masking secret key into one share for itself and one per neighbour, commits to each seed,
   * and seals each neighbour's shares under their ECDH channel key.
   */
  async shareKeys(request: ShareKeysRequest): Promise<ShareKeys> {
    this.requireStage("advertised", "share keys");
    this.checkRequest(request);
    const t = this.params.reconstruction_threshold;
    const encryption = this.encryption!;
    const masking = this.masking!;
    const { neighbours: listed, identities } = checkRoster(request, {
      id: this.id,
      session: this.session,
      params: this.params,
      encryption,
      masking,
      identityKey: this.identity.publicKey,
      pins: this.pins,
      refuse: (why) => this.refuse(request.step, why),
      leave: (code, why) => this.leave(code, request.step, why),
    });
    if (listed.length + 1 < t) this.refuse(request.step, `${listed.length} neighbours: with its own share, fewer than the ${t} shares that rebuild a secret`);
    const round = this.params.round;
    const channelKeys = new Map<string, Uint8Array>();
    const neighbours = new Map<string, Neighbour>();
    for (const n of listed) {
      try {
        channelKeys.set(n.id, pairSecret(encryption.secretKey, n.encryptionKey, "share-encryption", this.session, round, this.id, n.id));
        pairSecret(masking.secretKey, n.maskingKey, "pair-mask", this.session, round, this.id, n.id).fill(0); // X25519 refuses low-order points
      } catch {
        this.refuse(request.step, `a public key of ${n.id} is not a usable X25519 key`);
      }
      neighbours.set(n.id, n);
    }
    this.enter("advertised", "shared", "share keys");
    const count = listed.length + 1;
    const seeds = Array.from({ length: this.params.key_rounds }, () => this.randomBytes(KEY_BYTES));
    const [keyShares, ...seedShares] = await Promise.all([splitSecret(masking.secretKey, count, t), ...seeds.map((seed) => splitSecret(seed, count, t))]);
    this.drawn = { seeds, ownSeedShares: seedShares.map((shares) => shares[0]!), neighbours, roster: identities };
    const shares = listed.map((n, i) => {
      const key = channelKeys.get(n.id)!;
      const plaintext = packShares(seedShares.map((shares) => shares[i + 1]!), keyShares[i + 1]!);
      const sealed = sealShares(key, plaintext, round, this.id, n.id, this.randomBytes);
      key.fill(0);
      plaintext.fill(0);
      return { to: n.id, nonce: toBase64(sealed.nonce), ciphertext: toBase64(sealed.ciphertext) };
    });
    for (const s of [...seedShares.flatMap((shares) => shares.slice(1)), ...keyShares]) s.fill(0);
    const seed_commitments = seeds.map((seed, j) => toBase64(seedCommitment(seed, round + j, this.id)));
    return { ...this.header(), step: "share-keys", from: this.id, seed_commitments, shares };
  }

  /**
   * Step 3: opens the shares its neighbours sent (a share that fails the AEAD is logged and not
   * held), then sends its vector clipped, quantized and masked with its self mask and one pair
   * mask per neighbour that shared keys. NaN or infinite values are FT309, before any masking.
   *
   * Pre-quantized path: a Uint32Array is taken as already in Z_M (each value an integer in
   * [0, modulus_range)) and masked as it is, with no clipping and no quantization; the server's
   * result.quantizedSum is then the exact sum mod M of the clients' vectors, for a codec that
   * quantized them itself (distributed DP's encode, with M = 2^bits). A value outside Z_M is FT338.
   */
  maskedInput(request: MaskedInputRequest, vector: Float32Array | Uint32Array): MaskedInput {
    return this.maskedInputWith(request, vector, undefined);
  }

  /** The checks of a masked-input request; the neighbours whose shares it relays (they shared keys: the pair masks). */
  private checkMaskedInputRequest(request: MaskedInputRequest): { drawn: Drawn; senders: Set<string> } {
    this.requireStage("shared", "masked input");
    this.checkRequest(request);
    const drawn = this.drawn;
    if (drawn === null) return this.refuse(request.step, "a masked-input request in a round that reuses keys: the setup asked for the masked input");
    const senders = new Set<string>();
    for (const s of request.shares) {
      if (!drawn.neighbours.has(s.from) || senders.has(s.from)) this.refuse(request.step, `shares from ${s.from}, which is not a neighbour or is listed twice`);
      senders.add(s.from);
    }
    return { drawn, senders };
  }

  /** The whole mask of a checked masked-input request, before the input exists (nothing else changes). */
  private maskAhead(request: MaskedInputRequest): Uint32Array {
    const { drawn, senders } = this.checkMaskedInputRequest(request);
    const keys = { session: this.session, masking: this.masking!, neighbours: drawn.neighbours };
    return sumOfMasks(this.params.vector_length, this.params.modulus_range, drawn.seeds[0]!, this.id, senders, (other) => this.pairSeed(other, keys));
  }

  /** The masked input; `mask`, when given, is the request's whole mask, expanded ahead by maskAhead. */
  private maskedInputWith(request: MaskedInputRequest, vector: Float32Array | Uint32Array, mask: Uint32Array | undefined): MaskedInput {
    const { drawn, senders } = this.checkMaskedInputRequest(request);
    const quantized = this.quantize(vector);
    const encryption = this.encryption!;
    const held = new Map<string, HeldShares>();
    for (const s of request.shares) {
      const neighbour = drawn.neighbours.get(s.from)!;
      const nonce = fromBase64(s.nonce);
      const ciphertext = fromBase64(s.ciphertext);
      const key = pairSecret(encryption.secretKey, neighbour.encryptionKey, "share-encryption", this.session, this.params.round, this.id, s.from);
      const plaintext = nonce && ciphertext ? openShares(key, { nonce, ciphertext }, this.params.round, s.from, this.id) : null;
      key.fill(0);
      const pack = plaintext && unpackShares(plaintext, this.params.key_rounds);
      if (pack) held.set(s.from, pack);
      else this.logRefused(request.step, `the shares from ${s.from} fail AEAD decryption: this client cannot help rebuild its secrets`);
    }
    // The channel key is not needed any more: the neighbours hold their shares.
    eraseSecretKey(encryption.secretKey);
    this.keys = { session: this.session, round: this.params.round, params: this.params, masking: this.masking!, ...drawn, maskedWith: senders, held };
    this.drawn = null;
    return this.mask(quantized, mask);
  }

  /**
   * Step 3 of a round that reuses keys: the setup was the request, and every neighbour shared
   * keys in the setup round. The masks are expanded while the vector may still be training.
   */
  async maskedInputReused(vector: VectorSource): Promise<MaskedInput> {
    this.requireStage("shared", "masked input");
    const keys = this.keys;
    if (keys === null || this.drawn !== null) return this.refuse("setup", "a reuse of keys in a setup round");
    const mask = sumOfMasks(this.params.vector_length, this.params.modulus_range, keys.seeds[this.windowIndex()]!, this.id, keys.maskedWith, (other) => this.pairSeed(other));
    try {
      return this.mask(this.quantize(await vector()), mask);
    } finally {
      mask.fill(0);
    }
  }

  /** The vector clipped and quantized (FT309 for NaN or infinities), or taken as it is when pre-quantized: of the round's length, in Z_M (FT338). */
  private quantize(vector: Float32Array | Uint32Array): { values: Uint32Array; clipped: number } {
    if (!(vector instanceof Float32Array || vector instanceof Uint32Array) || vector.length !== this.params.vector_length)
      throw ftError("FT338", { client: this.id, why: `the masked input takes a Float32Array of length ${this.params.vector_length}, got ${vector.length} (or a pre-quantized Uint32Array of that length)` });
    if (vector instanceof Uint32Array) {
      const outside = vector.findIndex((v) => v >= this.params.modulus_range);
      if (outside >= 0) throw ftError("FT338", { client: this.id, why: `a pre-quantized input holds ${vector[outside]} at ${outside}, outside [0, ${this.params.modulus_range})` });
    }
    return vector instanceof Uint32Array ? { values: vector.slice(), clipped: 0 } : quantizeVector(vector, this.params, this.randomBytes);
  }

  /** The round's seed of the key window: the setup round is 0. */
  private windowIndex(): number {
    return this.params.round - this.keys!.round;
  }

  /** This round's pair-mask seed with `other` (keys.ts: HKDF with the key setup's session and this round). */
  private pairSeed(other: string, keys: Pick<KeySetup, "session" | "masking" | "neighbours"> = this.keys!): Uint8Array {
    return pairSecret(keys.masking.secretKey, keys.neighbours.get(other)!.maskingKey, "pair-mask", keys.session, this.params.round, this.id, other);
  }

  /** The quantized input plus the round's whole mask: `ahead` when expanded before (from the same seeds and partners), else expanded now. */
  private mask(quantized: { values: Uint32Array; clipped: number }, ahead?: Uint32Array): MaskedInput {
    const keys = this.keys!;
    this.enter("shared", "masked", "masked input");
    const masked = quantized.values;
    const seed = keys.seeds[this.windowIndex()]!;
    const mask = ahead ?? sumOfMasks(masked.length, this.params.modulus_range, seed, this.id, keys.maskedWith, (other) => this.pairSeed(other));
    seed.fill(0); // each seed masks one vector
    addMod(masked, mask, 1, this.params.modulus_range);
    mask.fill(0);
    this.clipped = quantized.clipped;
    return { ...this.header(), step: "masked-input", from: this.id, dtype: "uint32", length: masked.length, vector: masked };
  }

  /**
   * Step 4, the consistency check (Bonawitz et al. 2017, round 3; Bell et al. 2020): the server
   * tells every survivor one set, the clients whose masked vectors are in the sum. The client
   * refuses a set it is not in, that names a client the key list did not, that is below the
   * promised minimum (FT372), or that leaves it fewer than reconstruction_threshold clients among
   * itself and its neighbours; otherwise it signs the set with its identity key.
   */
  consistencyCheck(request: ConsistencyCheckRequest): ConsistencyCheck {
    this.requireStage("masked", "consistency check");
    this.checkRequest(request);
    const keys = this.keys!;
    const survivors = new Set(request.survivors);
    if (survivors.size !== request.survivors.length) this.refuse(request.step, "a client is listed twice");
    if (!survivors.has(this.id)) this.refuse(request.step, "this client is not among the survivors");
    for (const id of survivors) if (!keys.roster.has(id)) this.refuse(request.step, `${id} did not advertise keys in this round`);
    if (survivors.size < this.params.min_clients) this.belowMinimum(request.step, survivors.size, "in the survivor set");
    // A neighbourhood below the threshold is a sum of too few clients to reveal (Flower's client checks it too).
    const t = this.params.reconstruction_threshold;
    const around = 1 + [...keys.maskedWith].filter((id) => survivors.has(id)).length;
    if (around < t) this.refuse(request.step, `${around} survivors among this client and its neighbours, fewer than reconstruction_threshold ${t}`);
    this.enter("masked", "checked", "consistency check");
    this.survivors = survivors;
    const signature = signTranscript(this.identity, survivorsTranscript(this.session, this.params.round, request.survivors));
    return { ...this.header(), step: "consistency-check", from: this.id, signature: toBase64(signature) };
  }

  /**
   * Step 5: the server forwards the signatures of this client and its neighbours over the set.
   * Unless at least reconstruction_threshold of them verify, each under its signer's pinned
   * identity key and over the very set this client signed, the client aborts (FT370) and
   * reveals nothing: a server that told some clients one set and others another cannot show
   * either group enough signatures for both. Then, for each neighbour in the set, its share of
   * that neighbour's self-mask seed of this round (and its own share of its own seed); for each
   * neighbour that shared keys and is not in the set, in the setup round its share of that
   * neighbour's masking secret key, in a round that reuses keys their pair seed of this round
   * (reuse.ts says why). Never both for one neighbour, and the step is answered once.
   */
  unmask(request: UnmaskRequest): Unmask {
    this.requireStage("checked", "unmask");
    this.checkRequest(request);
    const keys = this.keys!;
    const survivors = this.survivors!;
    const transcript = survivorsTranscript(this.session, this.params.round, [...survivors]);
    const signers = new Set<string>();
    for (const { id, signature } of request.signatures) {
      if (signers.has(id)) this.refuse(request.step, `a signature of ${id} is listed twice`);
      const key = id === this.id ? this.identity.publicKey : keys.neighbours.get(id)?.identityKey;
      if (key === undefined || !survivors.has(id)) this.refuse(request.step, `a signature of ${id}, which is not this client or a neighbour in the survivor set`);
      if (!verifyTranscript(key, transcript, fromBase64(signature)!)) this.leave("FT370", request.step, `the signature of ${id} does not verify over the survivor set this client signed: the server told them another set`);
      signers.add(id);
    }
    const t = this.params.reconstruction_threshold;
    if (signers.size < t) this.leave("FT370", request.step, `${signers.size} signatures over the survivor set this client signed, fewer than reconstruction_threshold ${t}`);
    this.enter("checked", "unmasked", "unmask");
    const j = this.windowIndex();
    const seedShares = [{ of: this.id, share: toBase64(keys.ownSeedShares[j]!) }];
    const keyShares: { of: string; share: string }[] = [];
    const pairSeeds: { of: string; seed: string }[] = [];
    for (const id of keys.maskedWith) {
      const held = keys.held.get(id);
      if (survivors.has(id)) {
        if (held !== undefined) seedShares.push({ of: id, share: toBase64(held.seedShares[j]!) });
      } else if (j === 0) {
        if (held !== undefined) keyShares.push({ of: id, share: toBase64(held.keyShare) });
      } else {
        const seed = this.pairSeed(id);
        pairSeeds.push({ of: id, seed: toBase64(seed) });
        seed.fill(0);
      }
    }
    for (const shares of [keys.ownSeedShares, ...[...keys.held.values()].map((h) => h.seedShares)]) shares[j]?.fill(0);
    // The window goes on only while every client of the key list survives, and not past its last round.
    this.reusable = true;
    if (survivors.size !== keys.roster.size || j + 1 >= this.params.key_rounds) this.retire();
    return { ...this.header(), step: "unmask", from: this.id, seed_shares: seedShares, key_shares: keyShares, ...(j === 0 ? {} : { pair_seeds: pairSeeds }) };
  }

  private header() {
    return { protocol: PROTOCOL, round: this.params.round } as const;
  }

  private requireStage(stage: Stage, what: string): void {
    if (this.stage !== stage) throw ftError("FT338", { client: this.id, why: `${what} called at stage ${this.stage}; each step is answered once, in order` });
  }

  private enter(from: Stage, to: Stage, what: string): void {
    this.requireStage(from, what);
    this.stage = to;
  }

  private checkRequest(request: { round: number; to: string; step: string }): void {
    if (request.round !== this.params.round) this.refuse(request.step, `it is for round ${request.round}, this client is in round ${this.params.round}`);
    if (request.to !== this.id) this.refuse(request.step, `it is addressed to ${request.to}`);
  }

  private belowMinimum = (step: string, count: number, what: string): never =>
    this.leave("FT372", step, `${count} clients ${what}, fewer than the ${this.params.min_clients} the round's setup promised`);

  /** A server request that shows the server deviating: logged as an error, and the client leaves the round. */
  private leave(code: "FT357" | "FT370" | "FT371" | "FT372", step: string, why: string): never {
    this.log({ level: "error", round: this.params.round, step, client: this.id, code, message: why });
    throw ftError(code, { client: this.id, why });
  }

  private logRefused(step: string, why: string): void {
    this.log({ level: "warn", round: this.params.round, step, client: this.id, code: "FT336", message: why });
  }

  private refuse(step: string, why: string): never {
    this.logRefused(step, why);
    throw ftError("FT336", { step, sender: "the server", why });
  }
}
