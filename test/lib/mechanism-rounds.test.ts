/**
 * The typed round functions of the releasing rounds (FedAvg with the chains clip,dp and secure)
 * inside a user's program: fedAvg(model, { aggregator: clip,dp }) takes private client data and
 * computes exactly fedAvgProgram's round under the same chain; with secure likewise; and a round
 * whose plain means would release private data is refused while tracing as in tsc (FT109), also
 * when the types are bypassed.
 */
import { expect, test } from "vitest";
import { atClients, atServer, f32, foldIn, i32, program } from "../../src/index.js";
import { aggregator, aggregationStages as stages, fedAvg, fedAvgProgram } from "../../src/lib/index.js";
import { batchInputs, host, read, separableCohort, tiny } from "./helpers.js";

const cohortSpecs = (isPrivate: boolean) => ({
  x: atClients(f32(["S", "B", 2]), { private: isPrivate }),
  y: atClients(i32(["S", "B"]), { private: isPrivate }),
  mask: atClients(f32(["S", "B"]), { private: isPrivate }),
  count: atClients(f32([]), { private: isPrivate }),
});
const params = { w: host([2, 2], [0.3, -0.2, 0.1, 0.4]), b: host([2], [0.05, -0.05]) };
const data = batchInputs(separableCohort([6, 4, 5], 3));

test("fedAvg(model) with clip,dp on private data in a user's program is fedAvgProgram's round, noise included", async () => {
  const clipDp = aggregator(stages.clip(1), stages.dp());
  const inputs = {
    params: atServer(tiny.params),
    ...cohortSpecs(true),
    lr: f32([]),
    clip: atServer(f32([])),
    noiseMultiplier: f32([]),
    expectedClients: f32([]),
    key: atServer(i32([2])),
    round: i32([]),
  };
  const mine = program(inputs, ({ params: p, x, y, mask, count, ...hypers }) => fedAvg(tiny, { aggregator: clipDp })(p, { x, y, mask, count }, hypers));
  expect(mine.aggregators).toEqual(["dpSum"]);
  const values = { params, ...data, lr: 0.5, clip: 0.05, noiseMultiplier: 1.1, expectedClients: 3, key: [3, 9], round: 4 };
  const [got, want] = [await read(await mine.run(values)), await read(await fedAvgProgram(tiny, { aggregator: clipDp }).run(values))];
  expect(got).toEqual(want);
});

test("fedAvg(model) with secure on private data in a user's program is fedAvgProgram's round", async () => {
  const secure = aggregator(stages.secure({ bits: 24, clip: 1, maxWeight: 20, maxClients: 5 }));
  const inputs = { params: atServer(tiny.params), ...cohortSpecs(true), lr: f32([]), key: atServer(i32([2])), round: i32([]) };
  const mine = program(inputs, ({ params: p, x, y, mask, count, lr, key, round }) =>
    fedAvg(tiny, { aggregator: secure })(p, { x, y, mask, count }, { lr, key: foldIn(key, round) }),
  );
  const values = { params, ...data, lr: 0.5, key: [1, 2], round: 3 };
  const [got, want] = [await read(await mine.run(values)), await read(await fedAvgProgram(tiny, { aggregator: secure }).run(values))];
  expect(got).toEqual(want);
});

test("a round whose plain means would release private data is FT109 while tracing too, with the types bypassed", () => {
  const inputs = { params: atServer(tiny.params), ...cohortSpecs(true), lr: f32([]), key: atServer(i32([2])) };
  const leaks = {
    fedAvg: () => program(inputs, ({ params: p, x, y, mask, count, lr }) => fedAvg(tiny)(p, { x, y, mask, count } as never, { lr })),
  };
  for (const [name, trace] of Object.entries(leaks)) expect(trace, name).toThrow(/FT109/);
});
