/**
 * Privacy at trace time, mirroring types/placement.ts (docs/language.md "Privacy"): values
 * computed from a private CLIENTS input carry the `private` flag of their ValueType, and no
 * node may take them to the SERVER except a declassifying aggregator (FT109).
 *
 * The taint rule: a node's outputs are private when one of its inputs (operands or captured
 * values) or, for nodes with bodies, one of its bodies' outputs is. map() is exact per output
 * (its output i is private when its function's output i is), as the types are; the other
 * nodes with bodies (loops) taint all their outputs, which the types approximate (a loop's
 * carry is private after it when a step made any of it private).
 */
import { ftError } from "../errors/error.js";
import type { Attrs } from "./primitives.js";
import { printType } from "./print.js";
import type { ValueType } from "./types.js";

/**
 * The primitives that may take private client data to the SERVER: secureSum's masked sum
 * (src/front/secure.ts). Each has its name in DeclassifyingOp (types/placement.ts) too.
 */
const declassifyingPrimitives: ReadonlySet<string> = new Set(["secure_sum"]);

/**
 * Aggregators composed of other primitives: their reduction node carries the aggregator's
 * name in its `aggregator` attribute (dpSum's clipped sum, src/front/privacy.ts), so the IR
 * says which reduction releases what, and transformations that replay the node keep it.
 */
const declassifyingAggregators: ReadonlySet<string> = new Set(["dpSum"]);

const declassifies = (op: string, attrs: Attrs): boolean =>
  declassifyingPrimitives.has(op) || (typeof attrs.aggregator === "string" && declassifyingAggregators.has(attrs.aggregator));

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

/**
 * The node's output types with the taint rule applied; FT109 when `check` is set (a program
 * traced by the user) and a private value would reach the SERVER.
 */
export function taintOutputs(node: TaintedNode, outputs: readonly ValueType[], check: boolean): ValueType[] {
  if (declassifies(node.op, node.attrs)) return outputs.map((t) => withPrivacy(t, false));
  const privateInput = node.inputs.find(isPrivate);
  const fromBodies = (node.bodyOutputs ?? []).some((outs) => outs.some(isPrivate));
  if (privateInput === undefined && !fromBodies) return [...outputs];
  const tainted =
    node.op === "map" ? outputs.map((t, i) => withPrivacy(t, isPrivate(node.bodyOutputs![0]![i]!))) : outputs.map((t) => withPrivacy(t, true));
  if (check) {
    const leak = tainted.find((t) => isPrivate(t) && t.placement === "server");
    if (leak !== undefined) throw privacyError(releasedBy(node), printType(privateInput ?? leak));
  }
  return tainted;
}

/** FT109 for `what` releasing a private value printed as `got`. */
export const privacyError = (what: string, got: string): Error => ftError("FT109", { what, got });

/**
 * The user's name for what releases the data: the operation called, or, for a node that a
 * transformation emitted (its user op is the primitive itself), the gradient whose transpose
 * sums over the clients.
 */
function releasedBy(node: TaintedNode): string {
  if (node.userOp !== node.op) return `${node.userOp}()`;
  return `a gradient through broadcast() (its transpose, ${node.op}, sums private cotangents over the clients)`;
}
