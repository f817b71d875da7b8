/** The differential tests' comparison itself: it must see every way two output trees differ. */
import { describe, expect, test } from "vitest";
import { differences } from "./compare.js";

const leaf = (...values: number[]) => ({ shape: [values.length], data: Float32Array.from(values) });

describe("differences()", () => {
  test("agreeing trees have none", () => {
    expect(differences({ a: leaf(1, 2), b: [leaf(3)] }, { a: leaf(1, 2), b: [leaf(3)] } as never)).toEqual([]);
  });

  test("an output the reference lacks, or lacks itself, is named", () => {
    expect(differences({ a: leaf(1), extra: leaf(2) }, { a: leaf(1) } as never)).toEqual(["output.extra: not in the reference"]);
    expect(differences({ a: leaf(1) }, { a: leaf(1), b: leaf(2) } as never)).toEqual(["output.b: missing"]);
    expect(differences([leaf(1), leaf(2)], [leaf(1)] as never)).toEqual(["output.1: not in the reference"]);
  });

  test("entries beyond the tolerance, shapes, and a tree against a tensor", () => {
    expect(differences({ a: leaf(1, 2) }, { a: leaf(1, 3) } as never)[0]).toMatch(/^output\.a: entry 1 differs/);
    expect(differences({ a: leaf(1) }, { a: leaf(1, 2) } as never)).toEqual(["output.a: shape [1] vs reference [2]"]);
    expect(differences({ a: { b: leaf(1) } }, { a: leaf(1) } as never)).toEqual(["output.a: a tree where the reference has a tensor"]);
    expect(differences({ a: [leaf(1)] }, { a: { 0: leaf(1) } } as never)).toEqual(["output.a: an array where the reference has a record"]);
  });
});
