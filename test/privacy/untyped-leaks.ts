/**
 * The leaks of private data that tsc cannot see, one builder each: this module type-checks
 * (it is part of the project's `tsc`), and test/privacy/untyped-leaks.test.ts holds tracing
 * to FT109 for every one. docs/language.md ("Privacy", "Where tsc cannot know") lists the
 * same cases and says why each cannot be closed. A value typed without a placement is no
 * longer among them: tsc fails closed on it (FT115, test/privacy/taint-containers.ts).
 */
import { atClients, atServer, f32, i32, mean, program, reduceSum, type Tensor } from "../../src/index.js";

const inputs = { params: atServer(f32([3])), readings: atClients(f32(["N", 3]), { private: true }), key: atServer(i32([2])) };

/** A value typed `any`. */
export const throughAny = () =>
  program(inputs, ({ readings }) => {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    const hidden: any = readings;
    return reduceSum(mean(hidden, 0));
  });

/** A type assertion that drops the privacy (as any assertion, it is the user's claim, not a proof). */
export const throughAssertion = () =>
  program(inputs, ({ readings }) => reduceSum(readings as unknown as Tensor<["N", 3], "float32", "clients">));

/**
 * A class instance spread into a tree: its TypeScript-`private` field is an own property, which
 * the spread copies at run time, but TypeScript leaves non-public members out of the spread's
 * type (by design: "spread drops private members"), so no type sees the leaf.
 */
class Summary<T> {
  constructor(private readonly rows: T) {}
  size(): number {
    return this.rows === undefined ? 0 : 1;
  }
}
export const throughClassSpread = () => program(inputs, ({ readings }) => reduceSum({ ...new Summary(mean(readings, 0)) }));

/**
 * An array aliased to a wider array type: TypeScript's arrays are covariant (a `T[]` is a
 * `(T | U)[]`, though a push through the wider alias breaks the narrower one), so a private
 * value pushed through the wide alias sits in an array typed public.
 */
export const throughArrayCovariance = () =>
  program(inputs, ({ readings }) => {
    const publicRows: Tensor<[3], "float32", "clients">[] = [];
    const anyRows: Tensor<[3], "float32", "clients" | "clients-private">[] = publicRows;
    anyRows.push(mean(readings, 0));
    return reduceSum(publicRows);
  });
