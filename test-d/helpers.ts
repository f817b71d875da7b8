/**
 * Shorthands for the static types the type tests use. A test declares its operands with these
 * (`declare const x: F32<["B", 784], "clients">`) instead of tracing a program, so that each
 * assertion reads as the one operation under test; the program tests trace real bodies.
 *
 * tsd only type-checks these files, so declared values never need to exist.
 */
import type { Placement, Shape, Tensor } from "../dist/src/index.js";

export type F32<S extends Shape, P extends Placement = "local"> = Tensor<S, "float32", P>;
export type I32<S extends Shape, P extends Placement = "local"> = Tensor<S, "int32", P>;
export type Bool<S extends Shape, P extends Placement = "local"> = Tensor<S, "bool", P>;

/** A value of static type T, for an operand written inline: `add(x, value<F32<[5]>>())`. */
export declare function value<T>(): T;
