/**
 * The leaks of private data that tsc cannot see, one builder each: this module type-checks
 * (it is part of the project's `tsc`), and test/privacy/untyped-leaks.test.ts holds tracing
 * to FT109 for every one. docs/language.md ("Privacy", "Where tsc cannot know") lists the
 * same cases.
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

/** A helper whose parameter is typed without a placement: its result's placement is unknown. */
const columnMeans = (t: Tensor<["N", 3], "float32">) => mean(t, 0);
export const throughUnplacedHelper = () => program(inputs, ({ readings }) => reduceSum(columnMeans(readings)));

/** A helper that returns `Tensor` (no type arguments). */
const rows = (t: Tensor<["N", 3], "float32", "clients-private">): Tensor => t;
export const throughBareTensor = () => program(inputs, ({ readings }) => reduceSum(rows(readings)));
