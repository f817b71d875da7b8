/**
 * program.aggregations: each aggregation as the TFF intrinsic it is, with its type; the robust
 * aggregators print as one intrinsic (not as the sums they are made of), and have no MapReduce
 * form (FT315: they need the whole cohort).
 */
import { expect, test } from "vitest";
import { atClients, f32, krum, program, reduceMean, reduceMedian, reduceTrimmedMean } from "../../src/index.js";
import { mapReduceForm } from "../../src/transform/mapreduce.js";

test("robust aggregators print in TFF notation next to the plain intrinsics", () => {
  const p = program({ x: atClients(f32([3])), b: atClients(f32([])) }, ({ x, b }) => ({
    median: reduceMedian(x),
    trimmed: reduceTrimmedMean(x, { trim: 0.25 }),
    krum: krum({ x, b }, { byzantine: 1, select: 2 }),
    mean: reduceMean(b),
  }));
  expect(p.aggregations).toEqual([
    "federated_median: ({f32[3]}@CLIENTS -> f32[3]@SERVER)",
    "federated_trimmed_mean<trim=0.25>: ({f32[3]}@CLIENTS -> f32[3]@SERVER)",
    "federated_krum<f=1,m=2>: (<{f32[3]}@CLIENTS,{f32[]}@CLIENTS> -> <f32[3]@SERVER,f32[]@SERVER>)",
    "federated_mean: ({f32[]}@CLIENTS -> f32[]@SERVER)",
  ]);
  expect(() => mapReduceForm(p.ir)).toThrow(/FT315: reduceMedian: it compares every client with the others, so it needs the whole cohort at once/);
});
