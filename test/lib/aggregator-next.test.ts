/**
 * An aggregator's next (TFF's AggregationProcess.next) in a user's own program: the clients'
 * values {T}@CLIENTS to T@SERVER with the next state. The mean is reduceWeightedMean by the
 * counts; clip,dp is the clipped sum plus negligible noise over the expected cohort, its clip
 * handed on; private values go in only through a releasing chain (FT109 otherwise, while
 * tracing with the types bypassed), and the program then releases through the chain's
 * aggregator alone.
 */
import { describe, expect, test } from "vitest";
import { atClients, atServer, f32, i32, program } from "../../src/index.js";
import { aggregator, aggregationStages as s, meanAggregator, type Aggregator } from "../../src/lib/index.js";
import { host, read } from "./helpers.js";

// Three clients' values f32[2], each with its example count and a one-step batch mask.
const values = host([3, 2], [3, 4, 0.3, 0.4, -6, 8]);
const counts = host([3], [1, 2, 5]);
const masks = host([3, 1, 1], [1, 1, 1]);
const specs = (isPrivate: boolean) => ({
  u: atClients(f32([2]), { private: isPrivate }),
  count: atClients(f32([]), { private: isPrivate }),
  mask: atClients(f32([1, 1]), { private: isPrivate }),
});
type Next = (updates: unknown, data: unknown, inputs: unknown) => { value: unknown; state: Record<string, unknown> };
const nextOf = (agg: Aggregator) => agg.next as unknown as Next;

describe("an aggregator's next in a user's program", () => {
  test("the mean: the clients' values weighted by their counts, at the SERVER, no state", async () => {
    const mean = program(specs(false), ({ u, count, mask }) => {
      const { value, state } = nextOf(meanAggregator)(u, { mask, count }, {});
      expect(state).toEqual({});
      return value as never;
    });
    const out = (await read(await mean.run({ u: values, count: counts, mask: masks } as never))) as number[];
    const weighted = [(3 * 1 + 0.3 * 2 - 6 * 5) / 8, (4 * 1 + 0.4 * 2 + 8 * 5) / 8];
    out.forEach((v, j) => expect(v).toBeCloseTo(weighted[j]!, 5));
    expect(mean.signature).toContain("-> f32[2]@SERVER");
  });

  test("clip,dp: each value clipped to the clip, summed with negligible noise, over the expected cohort; the clip handed on", async () => {
    const chain = aggregator(s.clip(1), s.dp());
    const inputs = { ...specs(true), clip: atServer(f32([])), noiseMultiplier: f32([]), expectedClients: f32([]), key: atServer(i32([2])), round: i32([]) };
    const dp = program(inputs, ({ u, count, mask, ...hypers }) => {
      const { value, state } = nextOf(chain)(u, { mask, count }, hypers);
      return { value, clip: state.clip } as never;
    });
    expect(dp.aggregators).toEqual(["dpSum"]);
    const out = (await read(await dp.run({ u: values, count: counts, mask: masks, clip: 0.5, noiseMultiplier: 1e-30, expectedClients: 4, key: [1, 2], round: 3 } as never))) as { value: number[]; clip: number };
    // Norms 5, 0.5 and 10, each clipped to 0.5: (0.3, 0.4) + (0.3, 0.4) + (-0.3, 0.4), over 4.
    out.value.forEach((v, j) => expect(v).toBeCloseTo([0.3 / 4, 1.2 / 4][j]!, 5));
    expect(out.clip).toBeCloseTo(0.5, 6);
  });

  test("private values: FT109 through a chain that does not release (the types bypassed), released through one that does", () => {
    expect(() => program(specs(true), ({ u, count, mask }) => nextOf(aggregator(s.clip(1), s.median()))(u, { mask, count }, {}).value as never)).toThrow(/FT109/);
    const secure = aggregator(s.secure({ bits: 30, clip: 10, maxWeight: 5, maxClients: 3 }));
    const released = program({ ...specs(true), key: atServer(i32([2])), round: i32([]) }, ({ u, count, mask, key, round }) => nextOf(secure)(u, { mask, count }, { key, round }).value as never);
    expect(released.aggregators).toEqual(["secureSum"]);
  });
});
