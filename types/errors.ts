/**
 * FT error messages at type level, filled from the one catalogue (src/errors/catalogue.ts),
 * so that `tsc` shows exactly the text the runtime throws.
 *
 * A failed check makes a parameter's type the message itself, a string literal such as
 * "FT101: broadcast() takes a SERVER value, got {f32[10]}@CLIENTS": the argument is then not
 * assignable to it and every editor prints the message.
 */
import type { Catalogue, ErrorCode } from "../src/errors/catalogue.js";
import type { IsAny, Typed } from "./tensor.js";

type Fill<Template extends string, Params> = Template extends `${infer Head}{${infer Key}}${infer Tail}`
  ? `${Head}${Key extends keyof Params ? Params[Key] & (string | number) : `{${Key}}`}${Fill<Tail, Params>}`
  : Template;

export type Message<Code extends ErrorCode, Params> = `${Code}: ${Fill<Catalogue[Code]["message"], Params>}`;

/** A failed check, carried through type computations until an API signature reports it. */
export interface Fail<M extends string = string> {
  readonly failure: M;
}
export type FailWith<Code extends ErrorCode, Params> = Fail<Message<Code, Params>>;

/** The messages of every Fail found in a (possibly tree-shaped) result, or never. */
// Leaves are asked first: most are tensors, and nothing is both a tensor and a Fail.
export type Failures<R> = IsAny<R> extends true
  ? never
  : R extends Typed
  ? never
  : R extends Fail<infer M>
    ? M
    : R extends readonly (infer E)[]
      ? Failures<E>
      : R extends object
        ? Failures<R[keyof R]>
        : never;

/**
 * T itself, in a form that the checker does not look into while T is still open. Inferring a
 * call's type arguments, the checker walks every branch of the conditional types in the
 * parameter types, and in the result type too (from the type the call's context expects: for a
 * call nested in another, the outer parameter's constraint, such as `Tensor`), instantiating
 * them with the type parameters still open, relating them, and building and comparing reverse
 * mapped types for trees; for an array or object literal argument it also computes the
 * constraint of the parameter type, through every type that type is built from. On nested
 * operations and literal arguments that was most of the check time. Both stop at an `infer`
 * type variable, whose constraint is unknown: result types and the messages of failed checks go
 * through Opaque, as no type argument here is inferred from either.
 */
type Opaque<T> = [T] extends [infer Known] ? Known : never;

/**
 * The type of a checked parameter: the argument as it is when there are no messages, else the
 * messages themselves, so that the argument is not assignable and tsc prints them.
 */
export type Validate<Arg, Messages> = [Messages] extends [never]
  ? Arg
  : // Rebuilt through a mapped type so that editors print the messages, not an alias name.
    { [K in Opaque<Messages> & string]: K }[Opaque<Messages> & string];

/**
 * The result type of a checked call, whether or not its checks passed: they report through the
 * parameter types, and a call that failed still has the type the user presumably meant (for
 * broadcast(x), x at the CLIENTS), so that the FT message is its only diagnostic, with no
 * "Property 'w' does not exist on type 'never'" after it.
 */
export type Presumed<Result> = Opaque<Result>;

/** Validate for operations whose result type carries the failures (Fail) it found. */
export type Checked<Arg, Result> = Validate<Arg, Failures<Result>>;
/**
 * The result of an operation whose rules (placement, dtype, shape) decide it. A failed one has
 * no result to presume (which operand's shape was meant?): it is `any`, TypeScript's own type
 * for what an error left undecided, which every check lets through, so that nothing follows
 * from the mistake. A Fail without a message comes from an operand that is itself never.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- see above
export type Outcome<Result> = Opaque<[Failures<Result>] extends [never] ? Exclude<Result, Fail> : any>;
