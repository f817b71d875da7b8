/**
 * helper(): a user's function made placement-generic (docs/language.md "Writing helpers").
 * Its body is typed once without placements, where every shape and dtype rule resolves; each
 * call checks that the arguments' placements join, in tsc (types/helper.ts) and here while
 * tracing, with the same codes and texts, and the result lives where the arguments do.
 */
import type { Helper } from "../../types/helper.js";
import { ftError } from "../errors/error.js";
import { joinPlacements } from "../ir/placement.js";
import { isTracer, type Tracer } from "./trace.js";
import { flatten } from "./tree.js";
import { expectFunction } from "./values.js";

const isLeaf = (x: unknown): x is Tracer | number => isTracer(x) || typeof x === "number";

/**
 * Makes `body` a helper named `name` (the name FT104 messages give it). Write the body's
 * parameters without placements (`Float<["B", 10]>`); call the helper at the SERVER, at the
 * CLIENTS, on members inside map(), on private data: the result is at the placement the
 * arguments join to, private when one of them is.
 * @placement the placement the arguments join to (FT102, FT104-FT106 name the helper); the body is
 * written without placements.
 */
export function helper<const Name extends string, const Params extends readonly unknown[], R>(
  name: Name,
  body: (...args: Params) => R,
): Helper<Name, Params, R> {
  if (typeof name !== "string" || name === "") throw ftError("FT302", { what: "helper() name", why: "expected a non-empty string" });
  expectFunction(body, "helper() body");
  const call = (...args: unknown[]): unknown => {
    const leaves = flatten(args, isLeaf, `${name}() arguments`).leaves.filter(isTracer);
    // The same left-to-right join as an operation on these operands: FT102, FT104-FT106 name the helper.
    if (leaves.length > 0) joinPlacements(name, leaves.map((t) => t.type));
    return (body as unknown as (...a: unknown[]) => unknown)(...args);
  };
  return call as never;
}
