/**
 * Keys at the clients: a SERVER key broadcast and folded with clientIndex() inside map()
 * gives every client its own stream, the same on every backend; drawing from the broadcast
 * key itself is FT317, and the other misuses have their codes.
 */
import * as tf from "@tensorflow/tfjs";
import { describe, expect, test } from "vitest";
import type * as FedTensor from "../../src/index.js";
import { add, atClients, atServer, broadcast, clientIndex, dropout, f32, FedTensorError, foldIn, fori, i32, map, program, randomKey, reduceSum, sum, uniform } from "../../src/index.js";
import { BACKENDS, runOn } from "./helpers.js";

function ftCode(build: () => unknown): string {
  try {
    build();
  } catch (error) {
    expect(error).toBeInstanceOf(FedTensorError);
    return (error as Error).message;
  }
  throw new Error("expected an FT error");
}

describe("per-client streams", () => {
  const perClient = program({ key: atServer(i32([2])), x: atClients(f32([3])) }, ({ key, x }) => ({
    draws: map((k, xm) => add(uniform(foldIn(k, clientIndex()), [3]), xm), broadcast(key), x),
    // clientIndex() also reaches loops inside map(): a per-step key of a local training loop.
    inLoop: map(
      (k, xm) =>
        fori(3, sum(xm), (step, acc) => add(acc, sum(dropout(xm, 0.5, foldIn(foldIn(k, clientIndex()), step))))),
      broadcast(key),
      x,
    ),
    total: reduceSum(map((k) => sum(uniform(foldIn(k, clientIndex()), [2])), broadcast(key))),
  }));
  const clients = 5;
  const inputs = { key: [0, 9], x: Array.from({ length: clients }, () => [0, 0, 0]) };

  test("every client draws its own numbers, the same on every backend", async () => {
    const reference = await runOn("reference", perClient, inputs);
    const rows = Array.from({ length: clients }, (_, c) => reference.draws!.slice(3 * c, 3 * c + 3).join());
    expect(new Set(rows).size).toBe(clients);
    for (const where of BACKENDS) expect(await runOn(where, perClient, inputs)).toEqual(reference);
  });

  // Workers run the compiled worker script, so this test uses the compiled library in dist/
  // (npm test builds it first), as test/runtime/workers.test.ts does.
  test("worker threads that share the clients keep each client's stream", async () => {
    const ft = (await import(`${"../../dist/src"}/index.js`)) as typeof FedTensor;
    // A matmul of two per-client values makes onnx on the CPU run map() as a client_loop
    // (src/runtime/lowering.ts), whose clients the worker threads split between them.
    const looped = ft.program({ key: ft.atServer(ft.i32([2])), x: ft.atClients(ft.f32([3])) }, ({ key, x }) =>
      ft.map((k, xm) => ft.matmul(ft.uniform(ft.foldIn(k, ft.clientIndex()), [3, 3]), ft.reshape(xm, [3, 1])), ft.broadcast(key), x),
    );
    const many = { key: [0, 9], x: Array.from({ length: 8 }, (_, c) => [1, c, 2]) };
    const together = await looped.run(many, { backend: "onnx", workers: 0 });
    const shared = await looped.run(many, { backend: "onnx", workers: 2 });
    expect(Array.from(await shared.data())).toEqual(Array.from(await together.data()));
    // The interpreter sums the products in float64: the same draws, other roundings.
    const reference = ft.interpret(looped.ir, many) as { data: Float64Array };
    const got = await shared.data();
    reference.data.forEach((v, i) => expect(got[i]).toBeCloseTo(v, 5));
    tf.dispose([together, shared]);
  });

  test("FT317: a draw inside map() from a key that is the same on every client", () => {
    const message = ftCode(() => program({ key: atServer(i32([2])), x: atClients(f32([3])) }, ({ key, x }) => map((k, xm) => add(uniform(k, [3]), xm), broadcast(key), x)));
    expect(message).toBe("FT317: uniform() inside map() draws from a key that is the same for every client: foldIn(key, clientIndex()) first");
    // A local key (randomKey inside map) is the same on every client too.
    expect(ftCode(() => program({ x: atClients(f32([3])) }, ({ x }) => map((xm) => dropout(xm, 0.5, randomKey(1)), x)))).toMatch(/^FT317: dropout\(\)/);
  });

  test("a key that is an input of each client (not all-equal) may be drawn from directly", async () => {
    const p = program({ keys: atClients(i32([2])) }, ({ keys }) => map((k) => uniform(k, [2]), keys));
    const out = await runOn("onnx", program({ keys: atClients(i32([2])) }, ({ keys }) => ({ u: map((k) => uniform(k, [2]), keys) })), { keys: [[0, 1], [0, 2]] });
    expect(out.u!.slice(0, 2)).not.toEqual(out.u!.slice(2));
    expect(p.signature).toBe("(<keys={i32[2]}@CLIENTS> -> {f32[2]}@CLIENTS)");
  });

  test("FT318: clientIndex() outside map()", () => {
    expect(ftCode(() => program({ key: atServer(i32([2])) }, () => clientIndex()))).toBe(
      "FT318: clientIndex() is the index of the client running map()'s function: call it inside map()",
    );
  });

  test("FT316: a tensor that is not a key", () => {
    expect(ftCode(() => program({ w: atServer(f32([2])) }, ({ w }) => uniform(w as never, [3])))).toBe(
      "FT316: uniform() takes a PRNG key i32[2] from randomKey(), split() or foldIn(), got f32[2]@SERVER",
    );
    expect(ftCode(() => program({ k: atServer(i32([3])) }, ({ k }) => foldIn(k as never, 1)))).toMatch(/^FT316: foldIn\(\) takes a PRNG key/);
  });
});
