/**
 * Embedding lookups (take) and their scatter-add gradients in the federated shapes the
 * random programs reach only now and then: a server table looked up by per-client ids
 * (shared table, batched indices), per-client gradients inside map (both batched, one
 * scatter per client), the server's gradient through map and reduceMean (batched
 * cotangents, then summed over clients), repeated ids and ids outside the table. Each agrees
 * on cpu, wasm and onnx with the reference interpreter, whose rules test/interpret checks by hand.
 */
import { expect, test } from "vitest";
import * as ft from "../../src/index.js";
import { checkAgreement } from "./harness.js";

const { atClients, atServer, broadcast, f32, grad, i32, map, mean, mul, program, reduceMean, take, tanh, sum } = ft;

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
