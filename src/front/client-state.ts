/**
 * Client state (docs/language.md "Client state"): keepOnClients(x) marks a CLIENTS value as an
 * output that each client keeps, and reads back next round as the program's input at the same
 * path (the runner pairs them: src/lib/run/client-state.ts). Private state may be kept, since
 * it never leaves its client; it reaches the SERVER only through a release, as every private
 * value does. Only the kept value itself is state: whatever an operation computes from it is
 * an ordinary value again (types/placement.ts KeptMark), so reducing it without a release, or
 * returning it changed, is FT109 as before.
 */
import type { Presumed, Validate } from "../../types/errors.js";
import type { KeepCheck, Kept } from "../../types/placement.js";
import type { TreeLike } from "../../types/tensor.js";
import { ftError } from "../errors/error.js";
import { isAtClients } from "../ir/placement.js";
import { checkLeaves, checkOutsidePerClient, flattenTracers } from "./placement.js";
import { currentGraph, type Tracer } from "./trace.js";
import { unflatten } from "./tree.js";

/** The tracers keepOnClients returned: a program's output check lets these alone be private. */
const kept = new WeakSet<Tracer>();

export const isKept = (t: Tracer): boolean => kept.has(t);

/**
 * Marks a CLIENTS value (tree) as client state: `{T}@CLIENTS(private)` may then be a program
 * output. Each leaf goes through stop_gradient, so that the mark is on a value of its own (the
 * input x itself is not state) and no derivative is taken through what a client stores.
 *
 * @placement `{T}@CLIENTS` (private allowed) to `{T}@CLIENTS` kept on each client, returned as
 * the program's output at an input's path; a SERVER or local value is FT117, inside map() FT105
 * @example
 * const round = program({ heads: atClients(f32([10]), { private: true }) }, ({ heads }) => ({ heads: keepOnClients(heads) }));
 */
// A call whose check failed returns `any`, as a failed operation does (types/errors.ts Outcome):
// its FT message is the mistake's one diagnostic, and nothing downstream repeats it.
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- see above
export function keepOnClients<T extends TreeLike>(x: Validate<T, KeepCheck<T>>): Presumed<[KeepCheck<T>] extends [never] ? Kept<T> : any> {
  const op = "keepOnClients";
  const { leaves, def, paths } = flattenTracers(x, `${op}() argument`);
  checkOutsidePerClient(op);
  checkLeaves(op, leaves, paths, isAtClients, (got) => ftError("FT117", { got }));
  const graph = currentGraph(op);
  const marked = leaves.map((t) => graph.emit("stop_gradient", [t], {}, op)[0]!);
  for (const t of marked) kept.add(t);
  return unflatten(def, marked) as never;
}
