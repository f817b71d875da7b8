import { describe, expect, test } from "vitest";
import { atClients, atServer, broadcast, f32, grad, map, mul, program, reduceMean, reduceSum, sum, type Graph, type Tensor } from "../../src/index.js";

type ServerVector = Tensor<[3], "float32", "server">;
type ClientVectors = Tensor<[3], "float32", "clients">;

/** Every primitive in a graph and its bodies. */
const ops = (g: Graph): string[] => g.nodes.flatMap((n) => [n.op, ...(n.bodies ?? []).flatMap(ops)]);
/** The primitives grad() added: those of the program minus those of its forward pass. */
function gradientOps(withGrad: Graph, forward: Graph): string[] {
  const remaining = [...ops(withGrad)];
  for (const op of ops(forward)) remaining.splice(remaining.indexOf(op), 1);
  return remaining;
}

describe("the federated cotangent rules appear in the gradient IR (SPEC section 5)", () => {
  test("the gradient of broadcast is a sum over clients", () => {
    const loss = (w: ServerVector, x: ClientVectors) => reduceMean(map((wm, xm) => sum(mul(wm, xm)), broadcast(w), x));
    const inputs = { w: atServer(f32([3])), x: atClients(f32([3])) };
    const forward = program(inputs, ({ w, x }) => loss(w, x));
    const differentiated = program(inputs, ({ w, x }) => grad(loss)(w, x));
    expect(gradientOps(differentiated.ir.graph, forward.ir.graph)).toContain("federated_sum");
  });

  test("the gradients of reduceSum and reduceMean are broadcasts", () => {
    for (const reduce of [reduceSum, reduceMean] as const) {
      const loss = (x: ClientVectors) => reduce(map((xm) => sum(mul(xm, xm)), x));
      const inputs = { x: atClients(f32([3])) };
      const forward = program(inputs, ({ x }) => loss(x));
      const differentiated = program(inputs, ({ x }) => grad(loss)(x));
      expect(gradientOps(differentiated.ir.graph, forward.ir.graph)).toContain("federated_broadcast");
    }
  });

  test("reduceMean's cotangent is divided by the number of clients", () => {
    const loss = (x: Tensor<[2], "float32", "clients">) => reduceMean(map((xm) => sum(xm), x));
    const differentiated = program({ x: atClients(f32([2])) }, ({ x }) => grad(loss)(x));
    expect(ops(differentiated.ir.graph)).toEqual(expect.arrayContaining(["federated_broadcast", "client_count", "div"]));
  });
});
