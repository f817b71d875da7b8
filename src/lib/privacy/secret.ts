/**
 * The secret randomness of a private run: the key of dpSum's noise, the key of secureSum's
 * masks and the Poisson sampling of DP cohorts. It comes from the operating system's CSPRNG
 * (node:crypto randomBytes), never from --seed: whoever knows the seed (it is in the config,
 * the metrics' folder and every checkpoint) could otherwise regenerate the noise and subtract
 * it, and two runs with one seed would add the same noise.
 *
 * One 32-byte secret per run; every use derives its own value from it with HMAC-SHA256 under
 * a label (a PRF), so the noise key, the mask key and each round's cohort are independent, and
 * a resumed run that reads the same secret repeats exactly what an uninterrupted one draws:
 * it neither reuses noise on new rounds nor releases a round twice with different noise.
 *
 * The secret lives in the run folder's `secret.key` (hex, created with mode 0600, never in
 * the config, the metrics or a checkpoint). `fromInsecureSeed` is the research mode asked
 * for by name (--dp-insecure-seed): reproducible, and therefore not private.
 */
import { createHash, createHmac, randomBytes } from "node:crypto";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { ftError } from "../../errors/error.js";
import { writeFileAtomic } from "../run/atomic-file.js";

/**
 * The file in a run folder that holds the run's secret.
 *
 * @example
 * import { existsSync } from "node:fs";
 * import { join } from "node:path";
 * import { SECRET_FILE } from "fedtensor/lib";
 * console.log(existsSync(join("runs/dp", SECRET_FILE))); // a DP run's folder holds its secret.key (mode 0600)
 */
export const SECRET_FILE = "secret.key";
const SECRET_BYTES = 32;

/**
 * What a secret key is for: each purpose derives its own key.
 *
 * @example
 * import { RunSecret, type SecretPurpose } from "fedtensor/lib";
 * const purpose: SecretPurpose = "secure-masks";
 * const maskKey = RunSecret.generate().roundKey(purpose, 0); // round 0's key for the secure sum's masks
 */
export type SecretPurpose = "dp-noise" | "secure-masks" | "distributed-dp" | "evaluation" | "personalization";

/**
 * Uniform numbers in [0, 1): what cohort sampling draws from (an Rng is one too).
 *
 * @example
 * import { poissonCohort, Rng, RunSecret, type UniformSource } from "fedtensor/lib";
 * const sources: UniformSource[] = [RunSecret.generate().cohortStream(0), Rng.fromSeed(0)]; // a secret stream (DP), or a seeded one (research)
 * const cohorts = sources.map((source) => poissonCohort(100, 0.1, source));
 */
export interface UniformSource {
  float(): number;
}

/**
 * HMAC-SHA256(secret, label:counter) in counter mode, 53 bits a number: a stream that only
 * the secret's holder can predict.
 */
class SecretStream implements UniformSource {
  private block = Buffer.alloc(0);
  private offset = 0;
  private counter = 0;

  constructor(
    private readonly secret: Buffer,
    private readonly label: string,
  ) {}

  float(): number {
    if (this.offset + 8 > this.block.length) {
      this.block = createHmac("sha256", this.secret).update(`${this.label}:${this.counter++}`).digest();
      this.offset = 0;
    }
    const high = this.block.readUInt32BE(this.offset) >>> 5; // 27 bits
    const low = this.block.readUInt32BE(this.offset + 4) >>> 6; // 26 bits
    this.offset += 8;
    return (high * 2 ** 26 + low) / 2 ** 53;
  }
}

/**
 * A run's secret (from the OS CSPRNG, never from --seed): it derives the keys of DP noise,
 * secure-sum masks and distributed DP per purpose and round, and the streams that sample DP
 * cohorts. Written only to the run folder's SECRET_FILE (mode 0600).
 *
 * @example
 * const secret = RunSecret.generate();
 * const noiseKey = secret.roundKey("dp-noise", 3); // round 3's dp noise key, two int32 words
 */
export class RunSecret {
  private constructor(
    private readonly bytes: Buffer,
    /** Derived from a public number (--dp-insecure-seed): reproducible, not private. */
    readonly insecure: boolean,
  ) {}

  /** A fresh secret from the OS CSPRNG. */
  static generate(): RunSecret {
    return new RunSecret(randomBytes(SECRET_BYTES), false);
  }

  /** The research mode's secret: a hash of the seed, so anyone who knows the seed knows the noise. */
  static fromInsecureSeed(seed: number): RunSecret {
    return new RunSecret(createHash("sha256").update(`fedtensor insecure research seed:${seed}`).digest(), true);
  }

  /** A random key (two int32 words, the language's key) for `purpose`. */
  key(purpose: SecretPurpose): [number, number] {
    const digest = createHmac("sha256", this.bytes).update(`key:${purpose}`).digest();
    return [digest.readInt32BE(0), digest.readInt32BE(4)];
  }

  /** A key for `purpose` in round `round` (fresh each round, as foldIn(key(purpose), round) is in the traced programs). */
  roundKey(purpose: SecretPurpose, round: number): [number, number] {
    const digest = createHmac("sha256", this.bytes).update(`round-key:${purpose}:${round}`).digest();
    return [digest.readInt32BE(0), digest.readInt32BE(4)];
  }

  /**
   * Client `client`'s key for round `round`'s distributed-DP noise and rounding: in the
   * simulation it stands for the key the client would draw from its own CSPRNG; no other
   * client's and no round's key tells anything about it. `release`: the round's update (its
   * digest's text as before releases were named) or the evaluation's histograms after it,
   * whose noise must be independent of the update's.
   */
  clientKey(round: number, client: number, release: "update" | "evaluation" | "personalization" = "update"): [number, number] {
    const digest = createHmac("sha256", this.bytes).update(release === "update" ? `client-key:${round}:${client}` : `client-key:${release}:${round}:${client}`).digest();
    return [digest.readInt32BE(0), digest.readInt32BE(4)];
  }

  /** The uniform stream that samples round `round`'s cohort. */
  cohortStream(round: number): UniformSource {
    return new SecretStream(this.bytes, `cohort:${round}`);
  }

  /** Writes the secret to `dir`/secret.key, readable by its owner only; FT307 when the file exists or cannot be written. */
  async save(dir: string): Promise<void> {
    const path = join(dir, SECRET_FILE);
    try {
      // Whole or not at all, and never over an existing key (exclusive): a resume needs this one.
      await writeFileAtomic(path, `${this.bytes.toString("hex")}\n`, { mode: 0o600, exclusive: true });
    } catch (error) {
      throw ftError("FT307", { path, why: `cannot create the run's secret key file: ${(error as Error).message}` });
    }
  }

  /** The secret a resumed run continues with; FT304 when the file is missing or not a secret. */
  static async load(dir: string): Promise<RunSecret> {
    const path = join(dir, SECRET_FILE);
    let text: string;
    try {
      text = await readFile(path, "utf8");
    } catch (error) {
      const why = `a private run resumes with the secret of its first rounds (${SECRET_FILE}), and it cannot be read (${(error as NodeJS.ErrnoException).code ?? (error as Error).message}); a new secret would release the rounds after the checkpoint a second time with fresh noise, outside the accountant`;
      throw ftError("FT304", { path, why });
    }
    const hex = text.trim();
    if (!new RegExp(`^[0-9a-f]{${2 * SECRET_BYTES}}$`).test(hex)) throw ftError("FT304", { path, why: `is not a run secret (${2 * SECRET_BYTES} hex digits)` });
    return new RunSecret(Buffer.from(hex, "hex"), false);
  }
}
