/**
 * Programs from recipes: the forward programs (every value the top level computes is an
 * output), the gradient programs (valueAndGrad or grad of a loss of server parameters) and
 * the loss alone (for finite differences), each with its source text and input data.
 */
import * as ft from "../../src/index.js";
import type { InputTree } from "../../src/interpret/reference.js";
import { call, codeOfTree, named, Scope, valueOfTree, withFunction, Writer, type Val, type ValTree } from "./expr.js";
import type { GradientRecipe, ProgramRecipe } from "./recipe.js";
import { meanLoss, runSteps } from "./steps.js";

/** One input: its name, member shape and placement. */
interface InputDecl {
  readonly name: string;
  readonly shape: readonly number[];
  readonly atClients: boolean;
}

export interface GeneratedProgram {
  readonly program: ft.Program<unknown, unknown>;
  /** The program as TypeScript (casts left out). */
  readonly code: string;
  /** Host data, which both paths take: CLIENTS inputs with the clients on axis 0. */
  readonly inputs: InputTree;
  readonly clients: number;
}

/** Every input is within [-2, 2]. */
const INPUT_BOUND = 2;

/** Multiples of 1/16 in [-2, 2], from a seeded generator (mulberry32): exact in float32, so both paths see the same numbers. */
function inputData(decls: readonly InputDecl[], clients: number, seed: number): InputTree {
  let state = seed >>> 0;
  const next = (): number => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
  const inputs: Record<string, { shape: number[]; data: number[] }> = {};
  for (const decl of decls) {
    const shape = decl.atClients ? [clients, ...decl.shape] : [...decl.shape];
    const size = shape.reduce((n, d) => n * d, 1);
    inputs[decl.name] = { shape, data: Array.from({ length: size }, () => Math.round(next() * 64 - 32) / 16) };
  }
  return inputs;
}

const specCode = (d: InputDecl) => `${d.atClients ? "atClients" : "atServer"}(f32([${d.shape.join(", ")}]))`;
const specOf = (d: InputDecl): object => (d.atClients ? ft.atClients(ft.f32([...d.shape]) as never) : ft.atServer(ft.f32([...d.shape]) as never));

/**
 * Traces `program(specs, body)` while writing its source: body gets the inputs as values in
 * a top-level scope and returns the output values (a list or a record of them).
 */
function traceProgram(
  decls: readonly InputDecl[],
  clients: number,
  writer: Writer,
  body: (scope: Scope, inputs: Val[]) => ValTree,
): ft.Program<unknown, unknown> {
  const specs = Object.fromEntries(decls.map((d) => [d.name, specOf(d)]));
  const trace = () =>
    ft.program(specs as never, (values: Record<string, unknown>) => {
      const inputs = decls.map((d) => named(d.name, values[d.name], INPUT_BOUND, false));
      const out = body(new Scope(writer, [...inputs], true, clients), inputs);
      writer.line(`return ${codeOfTree(out)};`);
      return valueOfTree(out);
    }) as ft.Program<unknown, unknown>;
  const open = `program({ ${decls.map((d) => `${d.name}: ${specCode(d)}`).join(", ")} }, ({ ${decls.map((d) => d.name).join(", ")} }) => {`;
  try {
    return writer.block(() => open, trace, "});");
  } catch (error) {
    throw new Error(`tracing the generated program failed: ${(error as Error).message}\n\n${writer}`);
  }
}

const declsOf = (recipe: ProgramRecipe, serverName: string): InputDecl[] => [
  ...recipe.server.map((shape, i) => ({ name: `${serverName}${i}`, shape, atClients: false })),
  ...recipe.clientData.map((shape, i) => ({ name: `c${i}`, shape, atClients: true })),
];

/** A forward program: the recipe's steps at top level; every value they compute is an output. */
export function forwardProgram(recipe: ProgramRecipe): GeneratedProgram {
  const decls = declsOf(recipe, "s");
  const writer = new Writer();
  const program = traceProgram(decls, recipe.clients, writer, (scope, inputs) => {
    runSteps(scope, recipe.steps);
    const computed = scope.pool.slice(inputs.length);
    return computed.length > 0 ? computed : inputs;
  });
  return { program, code: writer.toString(), inputs: inputData(decls, recipe.clients, recipe.dataSeed), clients: recipe.clients };
}

/**
 * The loss: the parameters broadcast, then the recipe's steps on them and the client data;
 * every value that depends on the parameters feeds the loss (see meanLoss).
 */
function lossOf(scope: Scope, params: readonly Val[], steps: GradientRecipe["steps"]): Val {
  for (const param of params) scope.emit(call("broadcast", param), param.bound);
  runSteps(scope, steps);
  return meanLoss(scope, scope.made().filter((v) => v.active), "server");
}

export interface GeneratedGradient extends GeneratedProgram {
  /** The loss alone, as a program of the same inputs: for finite differences. */
  readonly lossProgram: ft.Program<unknown, unknown>;
  /** Names of the parameter inputs, in the order of the gradient tree. */
  readonly params: readonly string[];
}

/** `valueAndGrad(loss)([p0, ...])` (or grad) at top level, returning { value, grads } ({ grads } for grad). */
export function gradientProgram(recipe: GradientRecipe): GeneratedGradient {
  const decls = declsOf(recipe, "p");
  const params = decls.filter((d) => !d.atClients).map((d) => d.name);
  // The loss sees the parameters, then the client data, as the loss program below does.
  const loss = (scope: Scope, inputs: readonly Val[]) =>
    lossOf(scope.child(inputs, [], true), inputs.slice(0, params.length), recipe.steps);
  const writer = new Writer();
  const program = traceProgram(decls, recipe.clients, writer, (scope, inputs) => {
    const data = inputs.slice(params.length);
    const qs = params.map(() => writer.fresh());
    const differentiate = recipe.withValue ? ft.valueAndGrad : ft.grad;
    const gradients = named("", undefined, Infinity, true);
    withFunction(
      scope,
      { before: `${recipe.withValue ? "valueAndGrad" : "grad"}(`, params: `[${qs.join(", ")}]`, after: `)([${params.join(", ")}])` },
      (paramValues) => loss(scope, [...qs.map((q, i) => named(q, (paramValues as unknown[])[i], INPUT_BOUND, true)), ...data]),
      (fn) => differentiate(fn as never)(inputs.slice(0, params.length).map((v) => v.value) as never),
      (value) => (recipe.withValue ? [value, gradients] : gradients),
    );
    const [first, second] = scope.made();
    const outputs: ValTree = recipe.withValue ? { value: first!, grads: second! } : { grads: first! };
    return outputs;
  });
  const lossProgram = traceProgram(decls, recipe.clients, new Writer(), (scope, inputs) => [
    loss(scope, inputs.map((v, i) => (i < params.length ? { ...v, active: true } : v))),
  ]);
  return { program, code: writer.toString(), inputs: inputData(decls, recipe.clients, recipe.dataSeed), clients: recipe.clients, params, lossProgram };
}
