/**
 * A client's SecAgg+ rounds across reconnections and server restarts: what lets a server killed
 * mid-round and resumed set the round up again, and what stops a server that only claims a
 * restart from learning more than one sum.
 *
 * Each setup carries a session id, fresh random bytes per SecAggServer. A client takes:
 * - one setup per (round, session): the same session twice is a replay (FT336);
 * - a setup of a round it is already in under another session: a restarted server. The earlier
 *   setup's secrets are dropped and the round starts again with fresh keys, a fresh seed and
 *   fresh masks;
 * - never a setup of a round whose unmask step it answered, in any session (FT356). Before its
 *   unmask answer a client's masked input is hidden by its self mask, whose seed only the unmask
 *   answers reveal. So the clients that answered an earlier setup's unmask step are never in a
 *   later setup of the round, and the clients a second sum can hold exclude at least the
 *   threshold of neighbours that answered the first: the difference of two sums of one round is
 *   still a sum of at least reconstruction_threshold clients, never one client's input.
 *
 * The rounds whose unmask step this client answered are kept as round numbers for the life of
 * the process (a few bytes a round).
 *
 * A setup that asks to reuse the last key setup (reuse.ts) is answered with the masked input at
 * once when checkReuse allows it; otherwise it is refused (FT373, FT374) and the key setup's
 * secrets are dropped, as they are by any full setup: the next round sets up afresh.
 */
import { ftError } from "../../errors/error.js";
import { SecAggClient, type SecAggClientOptions, type VectorSource } from "./client.js";
import { IdentityPins, newIdentity } from "./identity.js";
import { webCryptoRandomBytes } from "./random.js";
import { type ClientMessage, type Reuse, type Setup, SETUP_SIZE_LIMIT, messageSizeLimit, parseServerMessage } from "./messages.js";
import { checkResolvedParams } from "./params.js";
import { checkReuse } from "./reuse.js";

export class SecAggRounds {
  private current: SecAggClient | undefined;
  /** The rounds whose unmask step this client answered, with that setup's session. */
  private readonly revealed = new Map<number, string>();

  /** The client's identity and its pins of its peers' identity keys, for every round of this process. */
  private readonly options: SecAggClientOptions;

  constructor(options: SecAggClientOptions = {}) {
    const randomBytes = options.randomBytes ?? webCryptoRandomBytes;
    this.options = { ...options, identity: options.identity ?? newIdentity(randomBytes), pins: options.pins ?? new IdentityPins() };
  }

  /** The client of the round in progress (its parameters, its clipped count), if any. */
  get client(): SecAggClient | undefined {
    return this.current;
  }

  /**
   * Answers one raw server message of `round`: a setup starts (or, from a restarted server,
   * restarts) the round; the later steps go to its client. `vector` is read (and awaited: the
   * client may still be training) at the masked input. `promised` is the fewest clients the run promised a sum holds (the transport's, from
   * when the client joined): a setup whose min_clients is below it is FT372. FT336 for a message
   * the client refuses, FT356 for a setup of a round it unmasked.
   */
  async respond(round: number, raw: Uint8Array, vector: VectorSource, promised = 0): Promise<ClientMessage> {
    const limit = Math.max(SETUP_SIZE_LIMIT, this.current === undefined ? 0 : messageSizeLimit(this.current.params));
    const parsed = parseServerMessage(raw, limit);
    if (!parsed.ok) throw ftError("FT336", { step: "unknown", sender: "the server", why: parsed.reason });
    const request = parsed.message;
    if (request.round !== round) throw ftError("FT336", { step: request.step, sender: "the server", why: `it is for round ${request.round}, its frame for round ${round}` });
    if (request.step === "setup") return request.reuse === undefined ? this.setup(request, promised) : this.reuse(request, request.reuse, promised, vector);
    const client = this.current;
    if (client?.params.round !== round) throw ftError("FT336", { step: request.step, sender: "the server", why: `no setup of round ${round} came before it` });
    const answer = await client.answer(request, vector);
    if (answer.step === "unmask") this.revealed.set(round, client.session);
    return answer;
  }

  private setup(setup: Setup, promised: number): ClientMessage {
    const unmasked = this.revealed.get(setup.round);
    if (unmasked !== undefined) throw ftError("FT356", { round: setup.round, session: unmasked });
    this.checkPromise(setup, promised);
    if (this.current?.params.round === setup.round && this.current.session === setup.session)
      throw ftError("FT336", { step: "setup", sender: "the server", why: `a second setup of round ${setup.round} in session ${setup.session}` });
    // A new session of the round (a restarted server) or a new round: the earlier client and its secrets are dropped.
    this.current?.retire();
    this.current = SecAggClient.fromSetup(setup, this.options);
    return this.current.advertiseKeys();
  }

  /** A setup that reuses the last key setup: the masked input, or FT373 / FT374 and the key setup dropped. */
  private async reuse(setup: Setup, reuse: Reuse, promised: number, vector: VectorSource): Promise<ClientMessage> {
    const last = this.current;
    try {
      this.checkPromise(setup, promised);
      const keys = checkReuse(setup, reuse, last?.finished(), checkResolvedParams(setup.params));
      this.current = SecAggClient.reusing(setup, keys, this.options);
    } catch (error) {
      last?.retire();
      throw error;
    }
    return this.current.maskedInputReused(vector);
  }

  private checkPromise(setup: Setup, promised: number): void {
    if (setup.params.min_clients < promised)
      throw ftError("FT372", { client: setup.to, why: `the setup of round ${setup.round} promises a sum of at least ${setup.params.min_clients} clients, the run promised ${promised}` });
  }
}
