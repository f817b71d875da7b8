/**
 * The primitives einsum() traces into: one matmul for a contraction (its groups of letters
 * merged by reshape, also with a named batch dim among them), a broadcast mul for outer and
 * elementwise products, transposes only where the order changes; and the errors tsc cannot see.
 */
import { describe, expect, test } from "vitest";
import { atClients, atServer, bool, broadcast, einsum, f32, map, program } from "../../src/index.js";
import type { Graph } from "../../src/ir/types.js";

/** The primitives of a graph and of every body inside it, in order. */
function primitives(graph: Graph): string[] {
  return graph.nodes.flatMap((n) => [n.op, ...(n.bodies ?? []).flatMap(primitives)]);
}

const specs = {
  x: atClients(f32(["B", 784])),
  sequence: atClients(f32(["B", 12, 16])),
  w: atServer(f32([784, 10])),
  projection: atServer(f32([16, 8])),
  u: atClients(f32([5])),
  v: atClients(f32([7])),
};

describe("einsum traces into", () => {
  test("one plain matmul for a dense layer", () => {
    const p = program(specs, ({ x, w }) => map((xs, ws) => einsum("bi,io->bo", xs, ws), x, broadcast(w)));
    expect(primitives(p.ir.graph).filter((op) => op !== "federated_broadcast")).toEqual(["map", "matmul"]);
  });

  test("one matmul with the named batch dim and the positions merged into its rows", () => {
    const p = program(specs, ({ sequence, projection }) => map((s, w) => einsum("btd,de->bte", s, w), sequence, broadcast(projection)));
    const ops = primitives(p.ir.graph);
    expect(ops.filter((op) => op === "matmul")).toHaveLength(1);
    expect(ops).not.toContain("mul");
  });

  test("a transpose of the second operand for attention scores, and none for the weighted values", () => {
    const p = program(specs, ({ sequence }) => ({
      scores: einsum("bqd,bkd->bqk", sequence, sequence),
      values: einsum("bqk,bkd->bqd", einsum("bqd,bkd->bqk", sequence, sequence), sequence),
    }));
    expect(primitives(p.ir.graph)).toEqual(["transpose", "matmul", "transpose", "matmul", "matmul"]);
  });

  test("a broadcast mul and no matmul for an outer product", () => {
    const p = program(specs, ({ u, v }) => einsum("i,j->ij", u, v));
    const ops = primitives(p.ir.graph);
    expect(ops).toContain("mul");
    expect(ops).not.toContain("matmul");
  });

  test("nothing at all for the identity", () => {
    const p = program(specs, ({ u }) => einsum("i->i", u));
    expect(primitives(p.ir.graph)).toEqual([]);
  });
});

describe("einsum without '->'", () => {
  test("gives numpy's implicit output: the letters that occur once, in alphabetical order, capitals first", () => {
    expect(program(specs, ({ u, v }) => einsum("j,i", u, v)).signature).toContain("-> {f32[7,5]}@CLIENTS");
    expect(program(specs, ({ u, v }) => einsum("a,Z", u, v)).signature).toContain("-> {f32[7,5]}@CLIENTS");
    expect(program(specs, ({ u }) => einsum("i,i", u, u)).signature).toContain("-> {f32[]}@CLIENTS");
  });
});

describe("einsum refuses, when tracing", () => {
  test("an equation that is not a string (FT212)", () => {
    expect(() => program(specs, ({ u }) => einsum(3 as never, u))).toThrow(/^FT212: einsum\(\) equation '3' is not a string/);
  });

  test("bool operands (FT205)", () => {
    expect(() => program({ flags: atClients(bool([3])) }, ({ flags }) => einsum("i->", flags as never))).toThrow(
      /^FT205: einsum\(\) expects f32 or i32, got bool/,
    );
  });
});
