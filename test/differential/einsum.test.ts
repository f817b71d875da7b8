/**
 * einsum's common contractions, traced into matmul, transpose, reshape, mul and reduce_sum:
 * at the CLIENTS (batched over clients), inside map() with a broadcast server operand, and
 * differentiated. The reference interpreter's values are held to einsum computed here by
 * plain loops over every index assignment, its gradients to finite differences, and cpu,
 * wasm and onnx to the reference interpreter.
 */
import { expect, test } from "vitest";
import * as ft from "../../src/index.js";
import type { OutputLeaf } from "../../src/interpret/reference.js";
import { close, largest } from "./compare.js";
import { checkFiniteDifferences } from "./finite-differences.js";
import { checkAgreement } from "./harness.js";
import { deadline } from "../helpers/deadline.js";

const { atClients, atServer, broadcast, einsum, f32, map, program, reduceMean, sum, tanh, valueAndGrad } = ft;

const CLIENTS = 2;

/** Multiples of 1/16 in [-2, 2] from a fixed sequence: exact in float32. */
function data(shape: readonly number[], seed: number): { shape: number[]; data: number[] } {
  const size = shape.reduce((a, b) => a * b, 1);
  return { shape: [...shape], data: Array.from({ length: size }, (_, i) => (((i * 37 + seed * 101) % 65) - 32) / 16) };
}

/** einsum by definition: for every assignment of the letters, the product of the operands' entries, summed into the output's entry. */
function einsumByLoops(equation: string, operands: readonly { shape: number[]; data: number[] }[]): { shape: number[]; data: number[] } {
  const [lhs, out] = equation.split("->") as [string, string];
  const terms = lhs.split(",");
  const size = new Map<string, number>();
  terms.forEach((t, i) => [...t].forEach((c, axis) => size.set(c, operands[i]!.shape[axis]!)));
  const letters = [...size.keys()];
  const outShape = [...out].map((c) => size.get(c)!);
  const result = new Array<number>(outShape.reduce((a, b) => a * b, 1)).fill(0);
  const offset = (term: string, shape: readonly number[], at: Map<string, number>) =>
    [...term].reduce((o, c, axis) => o * shape[axis]! + at.get(c)!, 0);
  const visit = (k: number, at: Map<string, number>): void => {
    if (k === letters.length) {
      const product = terms.reduce((p, t, i) => p * operands[i]!.data[offset(t, operands[i]!.shape, at)]!, 1);
      result[offset(out, outShape, at)]! += product;
      return;
    }
    for (let v = 0; v < size.get(letters[k]!)!; v++) visit(k + 1, new Map(at).set(letters[k]!, v));
  };
  visit(0, new Map());
  return { shape: outShape, data: result };
}

/** Per-client operand data [clients, ...shape] split into the members. */
const member = (x: { shape: number[]; data: number[] }, c: number) => {
  const per = x.data.length / x.shape[0]!;
  return { shape: x.shape.slice(1), data: x.data.slice(c * per, (c + 1) * per) };
};

function expectLoops(got: OutputLeaf, equation: string, operands: readonly { shape: number[]; data: number[] }[], batched: readonly boolean[]) {
  const want = Array.from({ length: CLIENTS }, (_, c) => einsumByLoops(equation, operands.map((x, i) => (batched[i] ? member(x, c) : x))));
  expect([...got.shape]).toEqual([CLIENTS, ...want[0]!.shape]);
  const flat = want.flatMap((w) => w.data);
  const scale = largest(flat);
  flat.forEach((w, i) => expect(close(got.data[i]!, w, scale), `${equation} entry ${i}: ${got.data[i]} vs ${w}`).toBe(true));
}

test("einsum's common contractions agree with loops over their indices, on cpu, wasm and onnx", async () => {
  const shapes = { m: [3, 4], w: [4, 5], v: [4], u: [5], b3: [2, 3, 4], c3: [2, 4, 5], q: [2, 2, 3, 4], k: [2, 2, 5, 4], t: [2, 3, 4, 5], s: [4, 5], named: [2, 3, 4] };
  const specs = {
    m: atClients(f32([3, 4])),
    w: atServer(f32([4, 5])),
    v: atClients(f32([4])),
    u: atClients(f32([5])),
    b3: atClients(f32([2, 3, 4])),
    c3: atClients(f32([2, 4, 5])),
    q: atClients(f32([2, 2, 3, 4])),
    k: atClients(f32([2, 2, 5, 4])),
    t: atClients(f32([2, 3, 4, 5])),
    s: atClients(f32([4, 5])),
    // A named batch dim among the rows that the matmul merges.
    named: atClients(f32(["B", 3, 4])),
  };
  const p = program(specs, ({ m, w, v, u, b3, c3, q, k, t, s, named }) => {
    const shared = broadcast(w);
    return {
      matmul: map((x, y) => einsum("ij,jk->ik", x, y), m, shared),
      matmulT: map((x, y) => einsum("ij,jk->ki", x, y), m, shared),
      projected: map((x, y) => einsum("btd,de->bte", x, y), named, shared),
      batched: einsum("bij,bjk->bik", b3, c3),
      scores: einsum("bhqd,bhkd->bhqk", q, k),
      weighted: einsum("bhqk,bhkd->bhqd", einsum("bhqd,bhkd->bhqk", q, k), k),
      outer: einsum("i,j->ij", v, u),
      transpose: einsum("ij->ji", m),
      rowSums: einsum("ij->i", m),
      total: einsum("ij->", m),
      dot: einsum("i,i->", v, v),
      elementwise: einsum("ij,ij->ij", s, s),
      twoContracted: einsum("bijk,jk->bi", t, s),
      summedFirst: einsum("ij,k->ik", m, u),
      batchedDot: einsum("bij,bij->b", b3, b3),
      // numpy's implicit output: "ik" and "ij".
      implicitMatmul: einsum("ij,jk", m, s),
      implicitTranspose: einsum("ji", m),
    };
  });
  const inputs = Object.fromEntries(
    Object.entries(shapes).map(([name, shape], i) => [name, data(name === "w" ? shape : [CLIENTS, ...shape], i + 1)]),
  );
  const reference = (await checkAgreement({ program: p, code: "einsum contractions", inputs, clients: CLIENTS }, ["cpu", "wasm", "onnx"])) as Record<string, OutputLeaf>;
  const x = inputs as Record<string, { shape: number[]; data: number[] }>;
  // Each output's equation written out (implicit ones too) and its operands; all but w are per client.
  const byLoops: Record<string, [string, ...string[]]> = {
    matmul: ["ij,jk->ik", "m", "w"],
    matmulT: ["ij,jk->ki", "m", "w"],
    projected: ["btd,de->bte", "named", "w"],
    batched: ["bij,bjk->bik", "b3", "c3"],
    scores: ["bhqd,bhkd->bhqk", "q", "k"],
    outer: ["i,j->ij", "v", "u"],
    transpose: ["ij->ji", "m"],
    rowSums: ["ij->i", "m"],
    total: ["ij->", "m"],
    dot: ["i,i->", "v", "v"],
    elementwise: ["ij,ij->ij", "s", "s"],
    twoContracted: ["bijk,jk->bi", "t", "s"],
    summedFirst: ["ij,k->ik", "m", "u"],
    batchedDot: ["bij,bij->b", "b3", "b3"],
    implicitMatmul: ["ij,jk->ik", "m", "s"],
    implicitTranspose: ["ji->ij", "m"],
  };
  for (const [name, [equation, ...operands]] of Object.entries(byLoops)) {
    expectLoops(reference[name]!, equation, operands.map((o) => x[o]!), operands.map((o) => o !== "w"));
  }
}, deadline(120_000));

test("gradients through einsum agree on cpu, wasm and onnx, and with finite differences", async () => {
  const specs = { w: atServer(f32([4, 3])), wq: atServer(f32([3, 3])), x: atClients(f32([2, 5, 4])) };
  type W = ft.Tensor<[4, 3], "float32", "server">;
  type Wq = ft.Tensor<[3, 3], "float32", "server">;
  // Self-attention scores and their weighted sum, then a projection: every attention form and its transposes.
  const loss = (w: W, wq: Wq, x: ft.Tensor<[2, 5, 4], "float32", "clients">) =>
    reduceMean(
      map(
        (xs, wm, qm) => {
          const h = einsum("btd,de->bte", xs, wm);
          const queries = einsum("bte,ef->btf", h, qm);
          const scores = tanh(einsum("bqf,bkf->bqk", queries, h));
          return sum(tanh(einsum("bqk,bkf->bqf", scores, h)));
        },
        x,
        broadcast(w),
        broadcast(wq),
      ),
    );
  const lossProgram = program(specs, ({ w, wq, x }) => [loss(w, wq, x)]);
  const gradProgram = program(specs, ({ w, wq, x }) => {
    const [value, grads] = valueAndGrad((params: [W, Wq]) => loss(params[0], params[1], x))([w, wq]);
    return { value, grads };
  });
  const inputs = { w: data([4, 3], 1), wq: data([3, 3], 2), x: data([CLIENTS, 2, 5, 4], 3) };
  const g = { program: gradProgram, lossProgram, params: ["w", "wq"], code: "einsum attention loss", inputs, clients: CLIENTS };
  const counts = checkFiniteDifferences(g, await checkAgreement(g, ["cpu", "wasm", "onnx"]));
  expect(counts.checked).toBe(4 * 3 + 3 * 3);
  await lossProgram.dispose();
}, deadline(120_000));
