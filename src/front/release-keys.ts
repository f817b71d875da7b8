/**
 * The keys of releasing mechanisms (dpSum's noise, secureSum's masks), checked while tracing
 * (docs/language.md "Privacy", "Secret keys"):
 * - a release's key is secret: a SERVER program input, or derived from one by split and
 *   foldIn only (FT110 for a constant such as randomKey(0), a local or CLIENTS input, or a
 *   key computed some other way). A key that is a loop's carry or a differentiated
 *   function's argument is checked from the value it starts as (the initial carry, the
 *   argument); other body parameters (map's members) are given the benefit of the doubt.
 * - a key feeds at most one release (FT111), as JAX's key-reuse checker has it: two releases
 *   whose keys have the same derivation, or one derived from the other, would share noise or
 *   masks; inside a loop, a key that does not depend on the step (the loop index, the carry)
 *   feeds the release of every step.
 *
 * A key's derivation is the expression that computes it, written out from the program's
 * inputs, the bodies' parameters and constants (values captured from enclosing functions
 * are followed out), so that foldIn(key, 3) written twice is recognised as one key.
 */
import { ftError } from "../errors/error.js";
import { printType } from "../ir/print.js";
import type { Node } from "../ir/types.js";
import { currentGraph, type GraphBuilder, type Tracer } from "./trace.js";

/** Where a value of a graph being recorded comes from. */
type Origin =
  | { readonly kind: "node"; readonly builder: GraphBuilder; readonly node: Node; readonly output: number }
  | { readonly kind: "input"; readonly builder: GraphBuilder; readonly index: number }
  | { readonly kind: "param"; readonly builder: GraphBuilder; readonly id: number };

function originOf(builder: GraphBuilder, id: number): Origin {
  for (const node of builder.nodes) {
    const output = node.outputs.indexOf(id);
    if (output >= 0) return { kind: "node", builder, node, output };
  }
  const index = builder.inputs.indexOf(id);
  if (index >= 0) return builder.parent === undefined ? { kind: "input", builder, index } : { kind: "param", builder, id };
  for (const [outer, inner] of builder.captures) if (inner === id) return originOf(builder.parent!, outer);
  return { kind: "param", builder, id };
}

/** The functions whose bodies are loop steps (src/front/loops.ts). */
const loopOps: ReadonlySet<string> = new Set(["fori", "scan"]);

/** The primitives that split() and foldIn() record (src/front/random.ts): the path from a key to the keys derived from it. */
const keyDerivations: ReadonlySet<string> = new Set(["random_bits", "slice", "reshape", "threefry2x32"]);

/** A value's derivation as text, and the bodies whose parameters it depends on. */
function derivation(builder: GraphBuilder, id: number, params: Set<GraphBuilder>, memo = new Map<string, string>()): string {
  const origin = originOf(builder, id);
  if (origin.kind === "input") return `<in${origin.index}>`;
  if (origin.kind === "param") {
    // A differentiated function's argument is the outer value itself; a loop's carry is not.
    const start = loopOps.has(origin.builder.tracedFor ?? "") ? undefined : origin.builder.paramOrigins?.[origin.builder.inputs.indexOf(origin.id)];
    if (start !== undefined) return derivation(start.graph, start.id, params, memo);
    params.add(origin.builder);
    return `<p${origin.id}>`;
  }
  const memoKey = `${origin.node.outputs[0]}`;
  const known = memo.get(memoKey);
  if (known !== undefined) return `${known}[${origin.output}]`;
  const inputs = origin.node.bodies === undefined ? origin.node.inputs.map((i) => derivation(origin.builder, i, params, memo)) : [`<v${origin.node.outputs[0]}>`];
  const text = `${origin.node.op}${JSON.stringify(origin.node.attrs)}(${inputs.join(",")})`;
  memo.set(memoKey, text);
  return `${text}[${origin.output}]`;
}

/** FT110 unless the key comes from a SERVER program input through split and foldIn only. */
function checkSecret(op: string, key: Tracer): void {
  const fail = (got: string) => ftError("FT110", { op, option: "key", want: "a secret key: a SERVER program input (atServer(i32([2])) fed from node:crypto), or split/foldIn of one", got });
  let builder = key.graph;
  let id = key.id;
  for (;;) {
    const origin = originOf(builder, id);
    if (origin.kind === "param") {
      // A loop's carry or a differentiated function's argument: checked from the value it starts as.
      const start = origin.builder.paramOrigins?.[origin.builder.inputs.indexOf(origin.id)];
      if (start === undefined) return;
      builder = start.graph;
      id = start.id;
      continue;
    }
    if (origin.kind === "input") {
      const type = origin.builder.values.types[origin.builder.inputs[origin.index]!]!;
      if (type.placement === "server" && type.private !== true) return;
      throw fail(`the ${type.placement === "local" ? "local " : ""}program input ${printType(type)}`);
    }
    const { node } = origin;
    if (node.op === "constant") throw fail(`a constant key (randomKey(${JSON.stringify(node.attrs.value)}) or a literal): anyone who reads the program can regenerate the noise or masks`);
    if (!keyDerivations.has(node.op)) throw fail(`a key computed by ${node.op}, not by split or foldIn`);
    builder = origin.builder;
    id = node.inputs[0]!;
  }
}

/**
 * Checks the key of a release that `op` is recording (FT110, FT111) and records it as used;
 * returns the release's number in the program. Called by dpSum() and secureSum() when the
 * user calls them, so that transformations that replay their nodes (gradients, batching) do
 * not count as uses.
 */
export function useReleaseKey(op: string, key: Tracer): number {
  checkSecret(op, key);
  const params = new Set<GraphBuilder>();
  const text = derivation(key.graph, key.id, params);
  // Every loop around the release must change the key from step to step.
  const inner: GraphBuilder[] = [];
  for (let b: GraphBuilder | undefined = currentGraph(op); b !== undefined; b = b.parent) {
    inner.push(b);
    if (b.tracedFor !== undefined && loopOps.has(b.tracedFor) && !inner.some((g) => params.has(g))) {
      throw ftError("FT111", { op, why: `the same in every step of the enclosing ${b.tracedFor}() (it depends on neither the loop index nor the carry): fold the loop index in` });
    }
  }
  const releases = key.graph.values.releases;
  for (const [used, by] of releases.entries()) {
    if (used === text || used.includes(text) || text.includes(used)) {
      throw ftError("FT111", { op, why: used === text ? `the key of an earlier ${by}` : `derived from (or the origin of) the key of an earlier ${by}` });
    }
  }
  releases.add(text, `${op}()`);
  return releases.size - 1;
}

/** The position among the program's inputs of the input that `t` is (followed out of enclosing bodies), or undefined. */
export function programInputOf(t: Tracer): number | undefined {
  const origin = originOf(t.graph, t.id);
  return origin.kind === "input" ? origin.index : undefined;
}
