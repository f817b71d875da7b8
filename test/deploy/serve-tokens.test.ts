/** Token reloads keep known clients' ids and never reuse one; client text reaching the log cannot forge lines; claims are bounded. */
import { describe, expect, it } from "vitest";
import { defaultMaxExamples, examplesClaimProblem, printable } from "../../src/deploy/server/claims.js";
import { highestId, reloadTokens } from "../../src/deploy/server/tokens.js";

describe("reloading --client-tokens", () => {
  const current = new Map([["a", "client-001"], ["b", "client-002"], ["c", "client-003"]]);

  it("keeps known tokens' ids when lines move or go, revokes the missing, numbers new ones on", () => {
    // The file now: c, d (a and b removed, c moved to the first line, d new).
    const fresh = new Map([["c", "client-001"], ["d", "client-002"]]);
    const reload = reloadTokens(current, fresh, highestId(current));
    expect([...reload.tokens]).toEqual([["c", "client-003"], ["d", "client-004"]]);
    expect(reload.revoked).toEqual(["client-001", "client-002"]);
    expect(reload.added).toEqual(["client-004"]);
  });

  it("never gives a revoked client's id to a new token", () => {
    const first = reloadTokens(current, new Map([["a", "client-001"]]), 3);
    const second = reloadTokens(first.tokens, new Map([["a", "client-001"], ["e", "client-002"]]), 3);
    expect(second.tokens.get("e")).toBe("client-004");
  });
});

describe("client claims and client text", () => {
  it("bounds the examples a client claims by the run's largest client (FT350)", () => {
    const bounds = { maxExamples: defaultMaxExamples([new Int32Array(3000), new Int32Array(1200)]) };
    expect(bounds.maxExamples).toBe(3000);
    expect(examplesClaimProblem("client-001", 3000, bounds)).toBeUndefined();
    expect(examplesClaimProblem("client-001", 2 ** 31 - 1, bounds)).toBe("FT350: client-001 claimed 2147483647 examples, outside the run's bound: at most 3000 (--max-client-examples)");
  });

  it("escapes control characters, so that a reason cannot start a forged log line", () => {
    expect(printable("oops\n2026-01-01T00:00:00Z round 9/9: 5 of 5 clients merged\u2028\u0007")).toBe("oops\\u000a2026-01-01T00:00:00Z round 9/9: 5 of 5 clients merged\\u2028\\u0007");
  });
});
