/**
 * MapReduce form: the accumulator's type does not depend on the number of clients, programs
 * that are not one round are refused with a code that says why, client state comes back per
 * client in cohort order, and `fedtensor ir --mapreduce`
 * prints the parts. (Agreement with the whole program: test/differential/mapreduce.test.ts.)
 */
import * as tf from "@tensorflow/tfjs";
import { afterEach, expect, test, vi } from "vitest";
import { irCommand } from "../../src/cli/ir.js";
import { add, aggregate, atClients, atServer, broadcast, clientIndex, f32, foldIn, fori, keepOnClients, map, mul, program, randomKey, reduceMean, reduceSum, uniform, valueAndGrad, zeros } from "../../src/index.js";
import { printType } from "../../src/ir/print.js";
import { scaffoldProgram } from "../../src/lib/algorithms/scaffold.js";
import { runStreamed } from "../../src/runtime/mapreduce.js";
import { runProgram } from "../../src/runtime/run.js";
import { mapReduceForm } from "../../src/transform/mapreduce.js";
import { fedavg } from "../fixtures/mapreduce-programs.js";
import { tiny } from "../lib/helpers.js";

afterEach(() => vi.restoreAllMocks());

test("the accumulator is SERVER tensors typed by the members alone: the same for 1, 7 or 5,000 clients", async () => {
  const form = mapReduceForm(fedavg.ir);
  // FedAvg: the total weight, the weighted sums of w and b, and the loss mean's sum and count.
  expect(form.accumulator.map(printType)).toEqual(["f32[]@SERVER", "f32[2,2]@SERVER", "f32[2]@SERVER", "f32[]@SERVER", "f32[]@SERVER"]);
  const zero = (await runProgram(form.parts.zero.ir, {}, { backend: "onnx", clients: 1 })) as Record<string, tf.Tensor>;
  for (const clients of [1, 7, 5000]) {
    const members = Object.fromEntries(
      form.parts.accumulate.inputs.filter((n) => n.startsWith("member")).map((name) => {
        const type = form.parts.accumulate.ir.values[form.parts.accumulate.ir.graph.inputs[form.parts.accumulate.inputs.indexOf(name)]!]!;
        return [name, tf.ones([clients, ...(type.shape as number[])])];
      }),
    );
    const acc = (await runProgram(form.parts.accumulate.ir, { ...zero, ...members }, { backend: "onnx" })) as Record<string, tf.Tensor>;
    expect(Object.values(acc).map((t) => t.shape)).toEqual(Object.values(zero).map((t) => t.shape));
    expect(Object.values(acc).reduce((n, t) => n + t.size, 0)).toBe(1 + 1 + 4 + 2 + 1);
    tf.dispose([...Object.values(members), ...Object.values(acc)]);
  }
  tf.dispose(Object.values(zero));
});

test("a value computed from an aggregation and broadcast again is FT313 (a second round)", () => {
  const p = program({ w: atServer(f32([3])), x: atClients(f32([3])) }, ({ w, x }) => {
    const mean = reduceMean(map((a, b) => mul(a, b), broadcast(w), x));
    return reduceSum(map((a, b) => add(a, b), broadcast(mean), x));
  });
  expect(() => mapReduceForm(p.ir)).toThrow(/^FT313: broadcast\(\): a round in MapReduce form talks to the clients once: its argument is computed from an aggregation's result/);
});

test("a CLIENTS output is FT314, unless it is client state (SCAFFOLD's client controls), which work returns per client", () => {
  const leaked = program({ x: atClients(f32([2])) }, ({ x }) => ({ x: add(x, x) }));
  expect(() => mapReduceForm(leaked.ir)).toThrow(/^FT314: output x is \{f32\[2\]\}@CLIENTS: a round in MapReduce form returns SERVER values only/);
  const form = mapReduceForm(scaffoldProgram(tiny, { participation: 0.5 }).ir);
  expect(form.keptState).toEqual([{ input: "clientControls.w", output: "kept0" }, { input: "clientControls.b", output: "kept1" }]);
  expect(form.workAndAccumulate.outputs.slice(-2)).toEqual(["kept0", "kept1"]);
  expect(form.parts.update.outputs).not.toContain("clientControls.w");
});

test("a streamed round returns each chunk's client state at its clients' places in the cohort, as the whole program does", async () => {
  const round = program({ w: atServer(f32([2])), s: atClients(f32([2])), x: atClients(f32([2])) }, ({ w, s, x }) => {
    const next = add(map((a, b) => mul(a, b), broadcast(w), x), s);
    return { w: reduceSum(next), s: keepOnClients(next) };
  });
  const rows = (values: number[][]) => ({ shape: [values.length, 2], data: Float32Array.from(values.flat()) });
  const [s, x] = [[[1, 2], [3, 4], [5, 6]], [[0.5, 1], [2, 3], [-1, 4]]];
  const whole = (await round.run({ w: [2, 3], s: rows(s), x: rows(x) } as never, { backend: "cpu" })) as unknown as { w: tf.Tensor; s: tf.Tensor };
  // Chunks out of cohort order, as size buckets cut them: places 2 and 0, then 1.
  const chunk = (places: number[]) => ({ s: rows(places.map((p) => s[p]!)), x: rows(places.map((p) => x[p]!)) });
  const placed = [[2, 0], [1]];
  const streamed = (await runStreamed(round.ir, { inputs: { w: [2, 3] }, cohortSize: 3, chunks: placed.map(chunk), positions: (k) => placed[k]! }, { backend: "cpu" })) as { w: tf.Tensor; s: tf.Tensor };
  expect(await streamed.s.array()).toEqual([[2, 5], [7, 13], [3, 18]]);
  expect(await streamed.s.array()).toEqual(await whole.s.array());
  expect(await streamed.w.array()).toEqual(await whole.w.array());
  // Without positions, the chunks' clients are the cohort's in order.
  const inOrder = (await runStreamed(round.ir, { inputs: { w: [2, 3] }, cohortSize: 3, chunks: [chunk([0, 1]), chunk([2])] }, { backend: "cpu" })) as { w: tf.Tensor; s: tf.Tensor };
  expect(await inOrder.s.array()).toEqual(await whole.s.array());
  tf.dispose([whole.w, whole.s, streamed.w, streamed.s, inOrder.w, inOrder.s]);
});

test("a loop of rounds and clients that depend on each other (grad through aggregate) are FT315", () => {
  const rounds = program({ w: atServer(f32([2])), x: atClients(f32([2])) }, ({ w, x }) =>
    fori(3, w, (_i, v) => add(v, reduceMean(map((a, b) => mul(a, b), broadcast(v), x)))),
  );
  expect(() => mapReduceForm(rounds.ir)).toThrow(/^FT315: scan: its body broadcasts or aggregates: a loop of rounds is several MapReduce forms/);
  const sumOf = (x: never) => aggregate(x, { zero: () => zeros([]), accumulate: (acc, m) => add(acc, m), merge: (a, b) => add(a, b), report: (acc) => acc });
  const through = program({ x: atClients(f32([])) }, ({ x }) => valueAndGrad((v: never) => sumOf(v))(x as never));
  expect(() => mapReduceForm(through.ir)).toThrow(/^FT31[45]: /);
});

test("clientIndex() (per-client random streams) is an input of the chunk, its clients' places in the cohort; inside a loop body it is FT315", () => {
  const noisy = program({ x: atClients(f32([2])) }, ({ x }) => reduceSum(map((m) => mul(m, uniform(foldIn(randomKey(1), clientIndex()), [2])), x)));
  const form = mapReduceForm(noisy.ir);
  expect(form.clientIndexInputs).toEqual(["clientIndex0"]);
  expect(form.parts.work.inputs).toContain("clientIndex0");
  const looped = program({ w: atServer(f32([2])), x: atClients(f32([2])) }, ({ w, x }) =>
    fori(2, w, (_i, v) => add(v, reduceSum(map((m) => mul(m, uniform(foldIn(randomKey(1), clientIndex()), [2])), x)))),
  );
  expect(() => mapReduceForm(looped.ir)).toThrow(/^FT315: /);
});

test("`fedtensor ir --mapreduce` prints every part's signature and the accumulator", async () => {
  const lines: string[] = [];
  vi.spyOn(console, "log").mockImplementation((line: string) => void lines.push(line));
  expect(await irCommand.run(["test/fixtures/mapreduce-programs.ts", "fedavg", "--mapreduce"])).toBe(0);
  const text = lines.join("\n");
  for (const part of ["prepare", "work", "zero", "accumulate", "merge", "report", "update"]) expect(text).toMatch(new RegExp(`^  ${part} +\\(`, "m"));
  expect(text).toContain("  work        (<broadcast0=f32[2,2]@SERVER,broadcast1=f32[2]@SERVER,lr=f32[],x={f32[S,B,2]}@CLIENTS,y={i32[S,B]}@CLIENTS,mask={f32[S,B]}@CLIENTS,count={f32[]}@CLIENTS> -> {<member0=f32[],member1=f32[2,2],member2=f32[2],member3=f32[]>}@CLIENTS)");
  expect(text).toContain("accumulator: <f32[]@SERVER,f32[2,2]@SERVER,f32[2]@SERVER,f32[]@SERVER,f32[]@SERVER> (fixed: the same for any number of clients)");
  await expect(irCommand.run(["test/fixtures/mapreduce-programs.ts", "twoRounds", "--mapreduce"])).rejects.toThrow(/^FT313/);
});
