/** `fedtensor client --identity-key FILE`: the SecAgg+ identity made once from the CSPRNG, kept with mode 0600, and read back the same. */
import { readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadIdentityKey } from "../../src/deploy/client/node.js";
import { tempDir } from "../run/temp-dir.js";

describe("the client's identity key file", () => {
  it("is made on first use (mode 0600), then read back as the same identity; a file that holds no key is FT305", () => {
    const path = join(tempDir("fedtensor-identity-"), "identity.key");
    const made = loadIdentityKey(path);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(readFileSync(path, "utf8")).toMatch(/^[0-9a-f]{64}\n$/);
    const again = loadIdentityKey(path);
    expect(Buffer.from(again.publicKey).equals(Buffer.from(made.publicKey))).toBe(true);
    expect(Buffer.from(loadIdentityKey(join(tempDir("fedtensor-identity-"), "other.key")).publicKey).equals(Buffer.from(made.publicKey))).toBe(false);
    writeFileSync(path, "not a key\n");
    expect(() => loadIdentityKey(path)).toThrow(/FT305: .*--identity-key.*does not hold an identity key/);
  });
});
