/**
 * secretKey(): the key of a release (dpSum's noise, secureSum's masks) as the host value that
 * feeds a SERVER `atServer(i32([2]))` program input (docs/language.md "Privacy", "Secret
 * keys"). Its 64 bits come from the operating system's CSPRNG (node:crypto), never from a seed.
 *
 * The value is for the program only: printing it (console.log, util.inspect, String) shows
 * "SecretKey(<redacted>)", and JSON.stringify throws, so that it does not end in a log, a
 * config or a checkpoint by accident. The runtime reads it as a host tensor ({ shape, data }).
 */
import { randomFillSync } from "node:crypto";
import { ftError } from "../errors/error.js";

const redacted = "SecretKey(<redacted>)";

/**
 * A run's secret key (i32[2]) drawn from node:crypto: program.run() reads it as a host tensor,
 * while printing, JSON and checkpoints refuse it (FT334), so the noise and masks it seeds are
 * never written out.
 *
 * @example
 * const round = program({ u: atClients(f32([10]), { private: true }), key: atServer(i32([2])) }, ({ u, key }) =>
 *   dpSum(u, { clip: 1, noiseMultiplier: 1, key }),
 * );
 * const key: SecretKey = secretKey();
 * await round.run({ u: [[0.1, 0, 0, 0, 0, 0, 0, 0, 0, 0]], key });
 */
export class SecretKey {
  readonly shape: readonly [2] = [2];
  readonly #words: Int32Array;

  constructor() {
    this.#words = randomFillSync(new Int32Array(2));
  }

  /** The key's two int32 words (a copy), as the runtime reads a host tensor. */
  get data(): Int32Array {
    return Int32Array.from(this.#words);
  }

  toString(): string {
    return redacted;
  }

  toJSON(): never {
    throw ftError("FT334", { what: "written to JSON" });
  }
}

// util.inspect's hook, by its registered symbol name (the same as node:util's inspect.custom),
// set on the prototype so that the public declarations do not need Node's types.
Object.defineProperty(SecretKey.prototype, Symbol.for("nodejs.util.inspect.custom"), { value: () => redacted });

/**
 * A fresh random key (i32[2]) from node:crypto, for a SERVER key input: `program.run({ ..., key: secretKey() })`.
 *
 * @placement none: a host value, given to program.run() for a SERVER key input.
 */
export function secretKey(): SecretKey {
  return new SecretKey();
}
