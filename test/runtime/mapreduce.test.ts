/**
 * MapReduce form: the accumulator's type does not depend on the number of clients, programs
 * that are not one round are refused with a code that says why, and `fedtensor ir --mapreduce`
 * prints the parts. (Agreement with the whole program: test/differential/mapreduce.test.ts.)
 */
import * as tf from "@tensorflow/tfjs";
import { afterEach, expect, test, vi } from "vitest";
import { irCommand } from "../../src/cli/ir.js";
import { add, aggregate, atClients, atServer, broadcast, clientIndex, f32, foldIn, fori, map, mul, program, randomKey, reduceMean, reduceSum, uniform, valueAndGrad, zeros } from "../../src/index.js";
import { printType } from "../../src/ir/print.js";
import { scaffoldProgram } from "../../src/lib/algorithms/scaffold.js";
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

test("a CLIENTS output (SCAFFOLD's client controls) is FT314", () => {
  expect(() => mapReduceForm(scaffoldProgram(tiny, { participation: 0.5 }).ir)).toThrow(/^FT314: output clientControls\.w is \{f32\[2,2\]\}@CLIENTS: a round in MapReduce form returns SERVER values only/);
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
