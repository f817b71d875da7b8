/** The reference interpreter's input checks, run-time shape errors, and its coverage of the primitive table. */
import { describe, expect, test } from "vitest";
import { add, atClients, atServer, broadcast, f32, i32, matmul, program, reduceMean, reshape, scan, sum, FedTensorError } from "../../src/index.js";
import { primitives } from "../../src/ir/primitives.js";
import type { ProgramIR } from "../../src/ir/types.js";
import { controlRules, interpret, multiOutputRules, tensorRules } from "../../src/interpret/reference.js";
import { plain, run } from "./helpers.js";

/** The FedTensorError that fn throws. */
function thrown(fn: () => unknown): FedTensorError {
  try {
    fn();
  } catch (error) {
    if (error instanceof FedTensorError) return error;
    throw error;
  }
  throw new Error("expected a FedTensorError");
}

describe("named dims", () => {
  const p = program({ x: atClients(f32(["B", 2])), y: atServer(f32(["B"])) }, ({ x, y }) => ({ x, y }));

  test("one size per name throughout the run", () => {
    const error = thrown(() => run(p, { x: { shape: [2, 3, 2], data: new Array(12).fill(0) }, y: [1, 2, 3, 4] }));
    expect(error.code).toBe("FT210");
    expect(error.message).toBe("FT210: input y: dim B is 4 here but 3 elsewhere");
  });

  test("a literal dim must match the data", () => {
    const error = thrown(() => run(p, { x: [[[1, 2, 3]]], y: [1] }));
    expect(error.message).toBe("FT210: input x: dim 1 is 3 here but 2 elsewhere");
  });

  test("CLIENTS inputs agree on the number of clients", () => {
    const q = program({ a: atClients(f32([])), b: atClients(f32([])) }, ({ a, b }) => add(a, b));
    expect(thrown(() => run(q, { a: [1, 2], b: [1, 2, 3] })).message).toBe("FT210: input b: dim clients is 3 here but 2 elsewhere");
    expect(thrown(() => run(q, { a: [1, 2], b: [1, 2] }, { clients: 3 })).message).toBe(
      "FT210: options.clients: dim clients is 3 here but 2 elsewhere",
    );
  });

  test("scan's xs agree on their length at run time", () => {
    const q = program({ u: f32([null]), v: f32([null]) }, ({ u, v }) => scan(u, { u, v }, (carry, { u: ut, v: vt }) => [carry, add(ut, vt)] as const)[1]);
    expect(thrown(() => run(q, { u: [1, 2], v: [1, 2, 3] })).message).toBe("FT210: scan() xs: dim 0 is 3 here but 2 elsewhere");
  });
});

describe("run-time shape errors use the shape rules' codes", () => {
  test("FT202 for matmul dims known only at run time", () => {
    const p = program({ a: f32([2, null]), b: f32([null, 2]) }, ({ a, b }) => matmul(a, b));
    const error = thrown(() => run(p, { a: [[1, 2, 3], [4, 5, 6]], b: [[1, 2], [3, 4]] }));
    expect(error.message).toBe("FT202: matmul() contracts f32[2,3] with f32[2,2]: inner dim 3 vs 2");
  });

  test("FT201 for elementwise dims known only at run time", () => {
    const p = program({ a: f32([null]), b: f32([null]) }, ({ a, b }) => add(a, b));
    expect(thrown(() => run(p, { a: [1, 2], b: [1, 2, 3] })).message).toBe("FT201: add() cannot broadcast f32[2] with f32[3]: dim 2 vs 3");
  });

  test("FT203 for a reshape whose count only the data gives", () => {
    const p = program({ x: f32([null]) }, ({ x }) => reshape(x, [-1, 4]));
    expect(thrown(() => run(p, { x: [1, 2, 3, 4, 5, 6] })).message).toBe("FT203: reshape() from f32[6] to [-1,4] changes the element count: 6 vs 4*?");
  });

  test("FT205 for a mean of int32 members, as for a tensor mean (already while tracing)", () => {
    const trace = () => program({ k: atClients(i32([])) }, ({ k }) => reduceMean(k as never));
    expect(thrown(trace).message).toBe("FT205: reduceMean() expects f32, got i32");
  });
});

describe("inputs", () => {
  const p = program({ params: { w: atServer(f32([2])), b: atServer(f32([])) }, x: atClients(f32([2])) }, ({ params, x }) =>
    reduceMean(add(sum(broadcast(params.w)), x)),
  );
  const fine = { params: { w: [1, 2], b: 0 }, x: [[1, 1], [2, 2]] };

  test("accepts { shape, data }, nested arrays and numbers", () => {
    const out = run(p, { params: { w: { shape: [2], data: Float32Array.of(1, 2) }, b: 0 }, x: { shape: [2, 2], data: [1, 1, 2, 2] } });
    expect(plain(out)).toEqual(plain(run(p, fine)));
    expect(plain(out).data).toEqual([4.5, 4.5]);
  });

  test.each([
    ["a missing input", { params: fine.params }, "FT302: input x: missing"],
    ["an extra input", { ...fine, y: 1 }, "FT302: input y: not an input of the program"],
    ["a wrong tree", { ...fine, params: [1, 2] }, "FT302: input params: expected a record of w, b, got an array"],
    ["a data length", { ...fine, x: { shape: [2, 2], data: [1, 2, 3] } }, "FT302: input x: data has 3 entries, shape [2,2] needs 4"],
    ["a non-numeric entry", { ...fine, x: [[1, "2"], [3, 4]] }, "FT302: input x: entry 1 is a string, not a number"],
    ["ragged arrays", { ...fine, x: [[1, 2], [3]] }, "FT302: input x: nested arrays are ragged"],
    ["a rank", { ...fine, x: [1, 2] }, "FT302: input x: has rank 1, expected rank 2: [C, ...member shape] for {f32[2]}@CLIENTS"],
    ["a zero-client cohort", { ...fine, x: { shape: [0, 2], data: [] } }, "FT302: input x: a cohort has at least one client"],
  ])("rejects %s with FT302", (_, inputs, message) => {
    expect(thrown(() => run(p, inputs as never)).message).toBe(message);
  });

  test("int32 data must be 32-bit integers; NaN is float data", () => {
    const q = program({ k: i32([2]), x: f32([2]) }, ({ k, x }) => ({ k, x }));
    expect(thrown(() => run(q, { k: [1, 2.5], x: [0, 0] })).message).toBe("FT302: input k: entry 1 2.5 is not a 32-bit integer");
    expect(plain((run(q, { k: [1, 2], x: [Number.NaN, 1] }) as { x: never }).x).data).toEqual([Number.NaN, 1]);
  });

  test("without CLIENTS inputs the cohort size comes from options.clients", () => {
    const q = program({ s: atServer(f32([])) }, ({ s }) => broadcast(s));
    expect(thrown(() => run(q, { s: 1 })).message).toBe(
      "FT302: options.clients: no input is at the CLIENTS, so the number of clients must be given",
    );
    expect(thrown(() => run(q, { s: 1 }, { clients: 0 })).code).toBe("FT305");
  });

  test("members declared equal must be equal", () => {
    const q = program({ x: atClients(f32([])) }, ({ x }) => x);
    const ir: ProgramIR = { ...q.ir, values: q.ir.values.map((t) => ({ ...t, placement: "clients-equal" as const })) };
    expect(plain(interpret(ir, { x: [2, 2] }))).toEqual({ shape: [2], data: [2, 2] });
    expect(thrown(() => interpret(ir, { x: [1, 2] })).message).toBe("FT302: input x: members differ, but f32[]@CLIENTS declares them equal");
  });
});

test("every primitive of the IR has exactly one evaluation rule", () => {
  const ruled = [...Object.keys(tensorRules), ...Object.keys(multiOutputRules), ...Object.keys(controlRules)].sort();
  expect(ruled).toEqual(Object.keys(primitives).sort());
});
