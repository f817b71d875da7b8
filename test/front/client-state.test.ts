/**
 * Client state in the language (docs/language.md "Client state"): keepOnClients marks CLIENTS
 * outputs as state, private ones included; the program lists their paths, runs them like any
 * output, and a stored IR keeps the list, checked when loaded. The leaks are the fixtures'
 * (test/fixtures/type-errors/ft109-client-state.ts, ft117-client-state.ts), in tsc and traced.
 */
import { describe, expect, it } from "vitest";
import { add, atClients, atServer, broadcast, dpSum, f32, FedTensorError, i32, keepOnClients, loadProgram, map, mul, program, sub } from "../../src/index.js";

const personal = program(
  { params: atServer(f32([3])), state: { head: atClients(f32([3]), { private: true }), steps: atClients(f32([])) }, key: atServer(i32([2])) },
  ({ params, state, key }) => {
    const next = map((h, w) => add(h, mul(w, 0.5)), state.head, broadcast(params));
    return {
      params: add(params, dpSum(sub(next, state.head), { clip: 100, noiseMultiplier: 1e-6, key })),
      state: keepOnClients({ head: next, steps: add(state.steps, 1) }),
    };
  },
);

describe("keepOnClients", () => {
  it("lists the kept outputs by path, and only those", () => {
    expect(personal.clientState).toEqual(["state.head", "state.steps"]);
    expect(program({ x: atClients(f32([3])) }, ({ x }) => ({ x })).clientState).toEqual([]);
  });

  it("runs: each client's kept member is its own", async () => {
    const out = (await personal.run({
      params: [1, 2, 3],
      state: { head: [[0, 0, 0], [10, 10, 10]], steps: [0, 4] },
      key: [1, 2],
    })) as unknown as { state: { head: { arraySync(): number[][] }; steps: { arraySync(): number[] } } };
    expect(out.state.head.arraySync()).toEqual([[0.5, 1, 1.5], [10.5, 11, 11.5]]);
    expect(out.state.steps.arraySync()).toEqual([1, 5]);
  });

  it("survives the IR's JSON, which is checked when loaded", () => {
    const json = JSON.stringify(personal.toJSON());
    expect(loadProgram(json).clientState).toEqual(["state.head", "state.steps"]);
    const ir = JSON.parse(json) as Record<string, unknown>;
    const load = (clientState: unknown) => () => loadProgram({ ...ir, clientState });
    expect(load(["params"])).toThrow(/clientState names "params", which is not at the CLIENTS/);
    expect(load(["nowhere"])).toThrow(/which is no output/);
    expect(load("state.head")).toThrow(FedTensorError);
  });
});
