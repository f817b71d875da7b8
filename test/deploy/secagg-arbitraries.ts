/**
 * fast-check arbitraries of SecAgg+ client messages (src/deploy/secagg/messages.ts), valid and
 * invalid: the five schemas with other versions, rounds, steps and senders, keys and shares of
 * random bytes or wrong lengths, extra fields, truncated or random bytes. Shared by the
 * in-process fuzz of the SecureSum driver (secagg-fuzz.test.ts) and the fuzz of a real served
 * secure run (serve-fuzz-secure.test.ts).
 *
 * Never a well-formed contribution: a masked vector of the round's length, or a sealed share
 * pack for each of the sender's neighbours. Those are a member's contribution, not an attack
 * on the boundary (secagg-fuzz.test.ts says why).
 */
import fc from "fast-check";
import { toBase64 } from "../../src/deploy/secagg/codec.js";
import { PROTOCOL } from "../../src/deploy/secagg/keys.js";
import { rawMessage } from "./secagg-helpers.js";

export const SECAGG_STEPS = ["advertise-keys", "share-keys", "masked-input", "consistency-check", "unmask"] as const;

export interface SecAggFuzzTarget {
  /** The round the fuzzer's messages mostly name. */
  readonly round: number;
  /** The members of the sum (the fuzzer's messages name them as senders and recipients). */
  readonly members: readonly string[];
  /** The fuzzer's own id, the sender most messages name. */
  readonly fuzzer: string;
  /** The masked vector's length in words: a masked input is never of this length. */
  readonly length: number;
  /** The share counts a well-formed share-keys message could have (the fuzzer's possible neighbours): never generated. */
  readonly neighbourCounts: readonly number[];
}

/** One fuzzed SecAgg+ message's bytes (the body of a secagg frame). */
export function fuzzedSecAggMessage(target: SecAggFuzzTarget): fc.Arbitrary<Uint8Array> {
  const { round, members, fuzzer, length, neighbourCounts } = target;
  const bytes = (n: number) => fc.uint8Array({ minLength: n, maxLength: n }).map(toBase64);
  const key = fc.oneof(bytes(32), bytes(64), bytes(31), fc.string({ maxLength: 50 }));
  const id = fc.oneof(fc.constantFrom(...members, "client-999"), fc.string({ maxLength: 140 }));
  const header = {
    protocol: fc.oneof({ weight: 8, arbitrary: fc.constant(PROTOCOL) }, { weight: 1, arbitrary: fc.constantFrom("fedtensor-secagg+/3", "") }),
    round: fc.oneof({ weight: 8, arbitrary: fc.constant(round) }, { weight: 1, arbitrary: fc.oneof(fc.integer(), fc.double(), fc.constant(-1)) }),
    from: fc.oneof({ weight: 4, arbitrary: fc.constant(fuzzer) }, { weight: 1, arbitrary: id }),
  };
  const share = fc.record({ of: id, share: fc.oneof(bytes(33), key) });
  const json = fc.oneof(
    fc.record({ ...header, step: fc.constant("advertise-keys"), encryption_key: key, masking_key: key, identity_key: key, signature: key }),
    fc.record({ ...header, step: fc.constant("share-keys"), seed_commitments: fc.array(key, { maxLength: 3 }), shares: fc.array(fc.record({ to: id, nonce: fc.oneof(bytes(12), key), ciphertext: fc.oneof(bytes(98), key) }), { maxLength: 6 }).filter((s) => !neighbourCounts.includes(s.length)) }),
    fc.record({ ...header, step: fc.constant("consistency-check"), signature: key }),
    fc.record({ ...header, step: fc.constant("unmask"), seed_shares: fc.array(share, { maxLength: 5 }), key_shares: fc.array(share, { maxLength: 5 }), pair_seeds: fc.array(fc.record({ of: id, seed: key }), { maxLength: 3 }) }),
    fc.record({ ...header, step: fc.oneof(fc.constantFrom(...SECAGG_STEPS, "setup"), fc.string({ maxLength: 20 })) }),
  );
  // Extra fields, which the strict schemas refuse.
  const withExtra = fc.tuple(json, fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 2 })).map(([m, extra]) => ({ ...extra, ...m }));
  const masked = fc
    .tuple(fc.record({ ...header, step: fc.constant("masked-input"), dtype: fc.constantFrom("uint32", "float32"), length: fc.oneof(fc.constant(length), fc.integer()) }), fc.uint8Array({ maxLength: 64 }))
    .filter(([, tail]) => tail.length !== 4 * length)
    .map(([m, tail]) => rawMessage(JSON.stringify(m), tail));
  const encoded = fc.oneof(json, withExtra).map((m) => rawMessage(JSON.stringify(m)));
  return fc.oneof(
    { weight: 6, arbitrary: encoded },
    { weight: 2, arbitrary: masked },
    { weight: 1, arbitrary: fc.uint8Array({ maxLength: 64 }) },
    { weight: 1, arbitrary: encoded.chain((m) => fc.integer({ min: 0, max: m.length - 1 }).map((n) => m.subarray(0, n))) },
  );
}
