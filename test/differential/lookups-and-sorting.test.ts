/**
 * Embedding lookups (take) and their scatter-add gradients in the federated shapes the
 * random programs reach only now and then: a server table looked up by per-client ids
 * (shared table, batched indices), per-client gradients inside map (both batched, one
 * scatter per client), the server's gradient through map and reduceMean (batched
 * cotangents, then summed over clients), repeated ids and ids outside the table; and sorting
 * with equal entries, whose order (stable, both ways) the random programs rarely meet. Each
 * agrees on cpu, wasm and onnx with the reference interpreter, whose rules test/interpret
 * checks by hand.
 */
import { expect, test } from "vitest";
import * as ft from "../../src/index.js";
import { checkAgreement } from "./harness.js";

const { add, argsort, atClients, atServer, broadcast, f32, grad, i32, map, mean, mul, program, reduceMean, sort, take, tanh, topk, sum } = ft;

const table = [[0.5, -1], [1.5, 0.25], [-0.75, 2], [1, 1]];
// Client 0 repeats id 1; client 1 has an id past the table (a row of zeros, no gradient).
const ids = [[1, 1, 3], [0, 2, 4]];

test("lookups of a server table by per-client ids, and their gradients, agree on cpu, wasm and onnx", async () => {
  const specs = { table: atServer(f32([4, 2])), ids: atClients(i32([3])) };
  const p = program(specs, ({ table, ids }) => {
    const loss = (t: typeof table) => reduceMean(map((member, rows) => mean(tanh(mul(take(member, rows), 2))), broadcast(t), ids));
    return {
      rows: map((member, rows) => take(member, rows), broadcast(table), ids),
      columns: map((member, rows) => take(member, take(rows, ft.constant([0, 1], "int32")), 1), broadcast(table), ids),
      perClient: map((member, rows) => grad((t: typeof member) => sum(tanh(take(t, rows))))(member), broadcast(table), ids),
      server: grad(loss)(table),
    };
  });
  const reference = await checkAgreement({ program: p, code: "lookups", inputs: { table, ids }, clients: 2 }, ["cpu", "wasm", "onnx"]);
  // The gradient reaches only rows that were looked up, with repeats added.
  const perClient = (reference as Record<string, { data: Float64Array }>).perClient!.data;
  const dtanh = (v: number) => 1 - Math.tanh(v) ** 2;
  expect(perClient[2]).toBeCloseTo(2 * dtanh(1.5));
  expect(perClient[0]).toBe(0);
  expect(perClient[8 + 2 * 3]).toBe(0);
});

test("sorts with equal entries, both ways, with gradients, agree on cpu, wasm and onnx", async () => {
  const specs = { x: atClients(f32([2, 5])), n: atClients(i32([5])) };
  const p = program(specs, ({ x, n }) => ({
    up: sort(x),
    down: sort(x, 0, true),
    order: argsort(x, -1),
    orderDown: argsort(x, -1, true),
    counts: sort(n, 0, true),
    countOrder: argsort(n),
    top: topk(x, 3),
    // Equal entries each get the cotangent of their own sorted position.
    grads: map((member) => grad((v: typeof member) => add(sum(tanh(topk(v, 2).values)), sum(mul(sort(v, 1, true), ft.constant([[1, 2, 3, 4, 5], [6, 7, 8, 9, 10]])))))(member), x),
  }));
  const x = [[[1, -2, 1, 0.5, 1], [3, 3, -1, 3, 0]], [[0, 0, 0, 0, 0], [2, -2, 2, -2, 2]]];
  const n = [[3, 1, 3, -7, 1], [0, 0, 5, 5, 0]];
  await checkAgreement({ program: p, code: "sorting", inputs: { x, n }, clients: 2 }, ["cpu", "wasm", "onnx"]);
});
