/**
 * How a secure round's cohort is cut into groups (src/lib/run/cohort.ts secureGroups): every
 * client in exactly one group, no group below the minimum, as few groups as chunks would need
 * (fewer when one would be too small), sizes within one of each other; FT329 when a chunk
 * cannot hold a group.
 */
import { describe, expect, test } from "vitest";
import { bucketSteps, secureGroups } from "../../src/lib/run/cohort.js";

const cohort = (n: number) => Int32Array.from({ length: n }, (_, i) => 1000 - 7 * i);
/** Clients with 1 to 9 batches, so that groups span size buckets. */
const stepsOf = (client: number) => 1 + (client % 9);

describe("secure groups", () => {
  test("every client once, no group below the minimum, sizes within one, padded to the largest bucket", () => {
    for (const [n, chunk, least] of [[10, 25, 10], [100, 25, 10], [1000, 25, 10], [25, 10, 10], [29, 10, 10], [7, 3, 3], [5, 2, 2], [13, 5, 4]] as const) {
      const groups = secureGroups(cohort(n), stepsOf, chunk, least);
      const all = groups.flatMap((g) => Array.from(g.clients));
      expect([...all].sort((a, b) => a - b)).toEqual(Array.from(cohort(n)).sort((a, b) => a - b));
      const sizes = groups.map((g) => g.clients.length);
      expect(Math.min(...sizes)).toBeGreaterThanOrEqual(least);
      expect(Math.max(...sizes) - Math.min(...sizes)).toBeLessThanOrEqual(1);
      // As many groups as chunks of `chunk` when they can all be large enough.
      expect(groups.length).toBe(Math.min(Math.ceil(n / chunk), Math.floor(n / least)));
      for (const g of groups) expect(g.steps).toBe(Math.max(...Array.from(g.clients, (c) => bucketSteps(stepsOf(c)))));
    }
  });

  test("a cohort smaller than the minimum is one group (which secureSum refuses, FT112); a chunk below it is FT329", () => {
    expect(secureGroups(cohort(4), stepsOf, 25, 10).map((g) => g.clients.length)).toEqual([4]);
    expect(() => secureGroups(cohort(40), stepsOf, 5, 10)).toThrow(
      "FT329: a streamed secure sum needs groups of at least 10 clients, but a chunk holds at most 5",
    );
  });
});
