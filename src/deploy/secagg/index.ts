/**
 * SecAgg+ (Bonawitz et al. 2017, "Practical Secure Aggregation for Privacy-Preserving Machine
 * Learning"; Bell et al. 2020, "Secure Single-Server Aggregation with (Poly)Logarithmic
 * Overhead"): the real protocol, with keys a server that follows it never holds, as a transport-agnostic
 * core. No node:* import: it runs in Node 20 and, bundled, in a browser. docs/deployment.md,
 * section "SecAgg+ protocol", describes the protocol, the wire format and the threat model.
 *
 * API (stable):
 *
 *   SecAggParams { round, vector_length, num_shares, reconstruction_threshold,
 *                  clipping_range, quantization_range, modulus_range,   (Flower's names)
 *                  min_clients?,    (the fewest clients a sum may hold; clients refuse fewer, FT372)
 *                  key_rounds? }    (rounds one key setup serves, reuse.ts; default 1, FT375)
 *   resolveSecAggParams(params, clients) -> ResolvedSecAggParams   (FT335 on bad values)
 *   defaultNumShares(clients)              about log n neighbours (Bell et al.)
 *   numSharesForDropouts(clients, k)       num_shares that survives any k dropouts
 *   majorityThreshold(numShares)           the smallest allowed reconstruction_threshold
 *   resolveNumShares(numShares, n), resolveThreshold(threshold, shares)   each count alone (FT335)
 *   SECAGG_DEFAULTS                        Flower's ranges
 *
 *   Server, one per round:
 *     const server = new SecAggServer(params, clientIds, { log?, randomBytes? });
 *     server.start()                 -> Map<clientId, Setup>        send each to its client
 *     server.receive(clientId, raw)  -> { accepted } | { accepted: false, reason }
 *                                       (raw: the message's bytes as received; refusals
 *                                       are logged with FT336 and the round goes on)
 *     server.pending()               -> clients yet to answer the current step
 *     await server.advance()         -> call when pending() is empty or the step's deadline
 *                                       passed: { kind: "messages", step, messages }
 *                                       | { kind: "done", result } | { kind: "aborted", reason }
 *     result: { sum: Float64Array (dequantized), quantizedSum: Uint32Array, clients,
 *               included, droppedAt }
 *     server.step, server.aborted, server.events
 *     server.reusable() -> ReusedKeys | undefined: pass as options.reuse to the next round's
 *                          server (same cohort) to skip advertise-keys and share-keys (reuse.ts)
 *
 *   Client, one per client per round:
 *     const client = SecAggClient.fromSetup(setupRawOrParsed, { log?, randomBytes? });
 *     client.advertiseKeys()                       -> AdvertiseKeys
 *     await client.shareKeys(shareKeysRequest)     -> ShareKeys  (the signed key list: every
 *                                                    signature checked, FT357; its graph seed, FT371)
 *     client.maskedInput(maskedInputRequest, vec)  -> MaskedInput  (vec: Float32Array of
 *                                                    vector_length; NaN/Infinity: FT309)
 *     client.consistencyCheck(request)             -> ConsistencyCheck  (its signature over the survivor set)
 *     client.unmask(unmaskRequest)                 -> Unmask  (threshold-many signatures over that set, or FT370)
 *     or, one call per raw server message after the setup:
 *     await client.respond(raw, () => vector)      -> the step's ClientMessage
 *     A bad server message is FT336 (the client leaves the round); a step called twice or out
 *     of order, or a vector of the wrong length, FT338.
 *
 *   A client across rounds, reconnections and server restarts (what a transport keeps):
 *     const rounds = new SecAggRounds({ log? });
 *     await rounds.respond(round, raw, () => vector, promised?)  -> the ClientMessage to send back
 *     (promised: the fewest clients the run promised a sum holds; a setup promising fewer is FT372)
 *     A restarted server's setup (a new session) restarts the round; a setup of a round whose
 *     unmask step this client answered is FT356 (rounds.ts says why). A setup that reuses the
 *     last key setup is answered with the masked input, or refused (FT373, FT374: reuse.ts).
 *
 *   Wire: encodeMessage(message) -> bytes (u32 LE JSON length, the JSON, the masked input's
 *   words raw); parseServerMessage(raw, limit) on the client
 *   (limit: SETUP_SIZE_LIMIT for the first message, then messageSizeLimit(client.params));
 *   parseClientMessage is what server.receive uses. Schemas: messages.ts (zod 4).
 */
export { type SecAggParams, type ResolvedSecAggParams, SECAGG_DEFAULTS, MAX_VECTOR_LENGTH, defaultNumShares, majorityThreshold, numSharesForDropouts, resolveKeyRounds, resolveNumShares, resolveSecAggParams, resolveThreshold, sumFits } from "./params.js";
export type { ReusedKeys } from "./reuse.js";
export { SecAggClient, type SecAggClientOptions, type VectorSource } from "./client.js";
export { SecAggRounds } from "./rounds.js";
export { type Identity, IdentityPins, identityOf, newIdentity } from "./identity.js";
export { SecAggServer, type SecAggServerOptions, type SecAggResult, type ServerStep, type CollectingStep, type StepOutcome, type Verdict } from "./server.js";
export type { SecAggEvent, SecAggLog } from "./events.js";
export type { RandomBytes } from "./random.js";
export { webCryptoRandomBytes } from "./random.js";
export {
  type AdvertiseKeys,
  type ClientMessage,
  type ConsistencyCheck,
  type ConsistencyCheckRequest,
  type MaskedInput,
  type MaskedInputRequest,
  type Parsed,
  type ServerMessage,
  type Setup,
  type ShareKeys,
  type ShareKeysRequest,
  type Step,
  type Unmask,
  type UnmaskRequest,
  SETUP_SIZE_LIMIT,
  clientMessageSchema,
  encodeMessage,
  messageSizeLimit,
  parseClientMessage,
  parseServerMessage,
  serverMessageSchema,
} from "./messages.js";
