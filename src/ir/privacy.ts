/**
 * Privacy at trace time, mirroring types/placement.ts (docs/language.md "Privacy"): values
 * computed from a private CLIENTS input carry the `private` flag of their ValueType, and no
 * node may take them to the SERVER except a declassifying aggregator (FT109).
 *
 * The taint rule: a node's outputs are private when one of its inputs (operands or captured
 * values) or, for nodes with bodies, one of its bodies' outputs is. map() and loops (scan)
 * are exact per output: map's output i is private when its function's output i is; a loop's
 * output i when its body's output i is, the body having been traced with its carry private
 * wherever a step makes it so (a fixed point, src/front/loops.ts), or, for a carry, when its
 * initial value is private and the loop may run no step. So a SERVER loop of DP rounds whose
 * data leaves only through dpSum keeps its model free.
 *
 * Derivatives do not declassify: only the user's call of a releasing aggregator is marked as
 * one. The tangent of a dpSum or secureSum (jvp) is a plain federated_sum of the tangents
 * (jvpTangentSum below), and the cotangents of a gradient are sums and broadcasts without the
 * mark, so a derivative of a released value with respect to private data is private and
 * reaching the SERVER is FT109: the mechanism's noise or masks do not protect a derivative.
 */
import { ftError } from "../errors/error.js";
import type { Attrs } from "./primitives.js";
import { printType } from "./print.js";
import type { Graph, ProgramIR, TreeDef, ValueType } from "./types.js";

/**
 * The primitives that may take private client data to the SERVER: secureSum's masked sum
 * (src/front/secure.ts). Each has its name in DeclassifyingOp (types/placement.ts) too.
 */
const declassifyingPrimitives: ReadonlySet<string> = new Set(["secure_sum"]);

/**
 * Aggregators composed of other primitives: their reduction node carries the aggregator's
 * name in its `aggregator` attribute (dpSum's clipped sum, src/front/privacy.ts; distributedDpSum's
 * noised modular sums, src/front/distributed-dp.ts), so the IR
 * says which reduction releases what, and transformations that replay the node keep it.
 */
const declassifyingAggregators: ReadonlySet<string> = new Set(["dpSum", "distributedDpSum"]);

export const declassifies = (op: string, attrs: Attrs): boolean =>
  declassifyingPrimitives.has(op) || (typeof attrs.aggregator === "string" && declassifyingAggregators.has(attrs.aggregator));

/** The user op under which jvp records the tangent of a releasing aggregator (see releasedBy). */
export const tangentOfRelease = "jvp";

export const isPrivate = (t: ValueType): boolean => t.private === true;

const withPrivacy = (t: ValueType, isPrivateValue: boolean): ValueType => {
  if (isPrivateValue === isPrivate(t)) return t;
  if (isPrivateValue) return { ...t, private: true };
  const { private: _dropped, ...rest } = t;
  return rest;
};

/** A node being recorded: its primitive, the user's name for it, and what the taint rule reads. */
export interface TaintedNode {
  readonly op: string;
  readonly userOp: string;
  readonly attrs: Attrs;
  /** Operands and captured values. */
  readonly inputs: readonly ValueType[];
  readonly bodyOutputs?: readonly (readonly ValueType[])[];
}

/** Per output, whether it is private (the rule of this file's header). */
function privateOutputs(node: TaintedNode, count: number): boolean[] {
  const body = node.bodyOutputs?.[0];
  if (node.op === "map") return Array.from({ length: count }, (_, i) => isPrivate(body![i]!));
  if (node.op === "scan") {
    const carries = node.attrs.carries as number;
    const mayRunNoStep = !(typeof node.attrs.length === "number" && node.attrs.length > 0);
    return Array.from({ length: count }, (_, i) => isPrivate(body![i]!) || (i < carries && mayRunNoStep && isPrivate(node.inputs[i]!)));
  }
  const tainted = node.inputs.some(isPrivate) || (node.bodyOutputs ?? []).some((outs) => outs.some(isPrivate));
  return Array.from({ length: count }, () => tainted);
}

/**
 * The node's output types with the taint rule applied; FT109 when `check` is set (a program
 * traced by the user) and a private value would reach the SERVER.
 */
export function taintOutputs(node: TaintedNode, outputs: readonly ValueType[], check: boolean): ValueType[] {
  if (declassifies(node.op, node.attrs) && node.userOp !== tangentOfRelease) return outputs.map((t) => withPrivacy(t, false));
  const flags = privateOutputs(node, outputs.length);
  if (!flags.some((f) => f)) return outputs.map((t) => withPrivacy(t, false));
  const tainted = outputs.map((t, i) => withPrivacy(t, flags[i]!));
  if (check) {
    const leak = tainted.find((t) => isPrivate(t) && t.placement === "server");
    if (leak !== undefined) throw privacyError(releasedBy(node), printType(node.inputs.find(isPrivate) ?? leak));
  }
  return tainted;
}

/** FT109 for `what` releasing a private value printed as `got`. */
export const privacyError = (what: string, got: string): Error => ftError("FT109", { what, got });

/**
 * The user's name for what releases the data: the operation called, or, for a node that a
 * transformation emitted (its user op is the primitive itself), the derivative that sums
 * private values over the clients.
 */
function releasedBy(node: TaintedNode): string {
  if (node.userOp === tangentOfRelease) {
    return "the tangent of dpSum() or secureSum() (jvp: a derivative with respect to private data, which the noise or masks do not protect)";
  }
  if (node.userOp !== node.op) return `${node.userOp}()`;
  return `a gradient through broadcast() (its transpose, ${node.op}, sums private cotangents over the clients)`;
}

/** What dpSum's clip and noise multiplier must be (FT110). */
export const positiveOption = "a finite number > 0";

/**
 * FT110 unless every dpSum option that is a program input (its sums' `clipInput` /
 * `noiseMultiplierInput` attributes, src/front/privacy.ts) is a finite number > 0 in `given`,
 * the inputs a run was given (a tree like the program's): checked before the program runs,
 * so that no noise of standard deviation 0 is added. program.run and streamed rounds call it.
 */
export function checkReleaseInputs(ir: ProgramIR, given: unknown): void {
  const walk = (graph: Graph): void => {
    for (const node of graph.nodes) {
      if (node.attrs.aggregator === "dpSum") {
        for (const name of ["clip", "noiseMultiplier"] as const) {
          const position = node.attrs[`${name}Input`];
          if (typeof position !== "number") continue;
          const value = scalarInput(inputAt(ir.inputTree, given, position));
          if (value !== undefined && !(value > 0 && Number.isFinite(value))) {
            throw ftError("FT110", { op: "dpSum", option: name, want: `${positiveOption} (the program input that feeds it)`, got: String(value) });
          }
        }
      }
      node.bodies?.forEach(walk);
    }
  };
  walk(ir.graph);
}

/** The value a run was given for the input at `position` among the program's inputs (undefined if absent). */
function inputAt(def: TreeDef, given: unknown, position: number): unknown {
  if (typeof def === "number") return def === position ? given : undefined;
  if (given === null || typeof given !== "object") return undefined;
  for (const [key, child] of Object.entries(def as Record<string, TreeDef>)) {
    const found = inputAt(child, (given as Record<string, unknown>)[key], position);
    if (found !== undefined) return found;
  }
  return undefined;
}

/** A scalar input's number (a number, a tensor of one element, {shape, data} or [x]); undefined for anything else, which the run reports. */
function scalarInput(leaf: unknown): number | undefined {
  if (typeof leaf === "number") return leaf;
  if (Array.isArray(leaf)) return leaf.length === 1 ? scalarInput(leaf[0]) : undefined;
  if (leaf !== null && typeof leaf === "object") {
    const tensor = leaf as { dataSync?: () => ArrayLike<number>; size?: number; data?: unknown };
    if (typeof tensor.dataSync === "function") return tensor.size === 1 ? tensor.dataSync()[0] : undefined;
    if (tensor.data !== undefined && typeof tensor.data === "object") return scalarInput(Array.from(tensor.data as ArrayLike<number>));
  }
  return undefined;
}
