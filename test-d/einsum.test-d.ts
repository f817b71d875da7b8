/**
 * einsum() equations at type level: tsc computes the result shape from the equation, and
 * rejects an equation that is not supported or does not fit its operands (FT212) and an index
 * sized differently by the two operands (FT213); test/type-errors.test.ts checks the texts.
 */
import { expectError, expectType } from "tsd";
import { einsum } from "../dist/src/index.js";
import { value, type Bool, type F32, type I32 } from "./helpers.js";

declare const x: F32<["B", 784]>;
declare const w: F32<[784, 10]>;
declare const q: F32<["B", 4, "T", 16]>;
declare const k: F32<["B", 4, "T", 16]>;
declare const scores: F32<["B", 4, "T", "T"]>;
declare const u: F32<[5]>;
declare const v: F32<[7]>;

// ---- the common contractions compute their shapes -----------------------------------------

expectType<F32<["B", 10]>>(einsum("bi,io->bo", x, w));
expectType<F32<[10, "B"]>>(einsum("bi,io->ob", x, w));
expectType<F32<[3, 4, 6]>>(einsum("bij,bjk->bik", value<F32<[3, 4, 5]>>(), value<F32<[3, 5, 6]>>()));
expectType<F32<["B", 4, "T", "T"]>>(einsum("bhqd,bhkd->bhqk", q, k));
expectType<F32<["B", 4, "T", 16]>>(einsum("bhqk,bhkd->bhqd", scores, k));
expectType<F32<[5, 7]>>(einsum("i,j->ij", u, v));
expectType<F32<[784, "B"]>>(einsum("ij->ji", x));
expectType<F32<["B"]>>(einsum("ij->i", x));
expectType<F32<[]>>(einsum("i,i->", u, u));
expectType<F32<["B", 784]>>(einsum("ij,ij->ij", x, x));
expectType<I32<[2, 3]>>(einsum("ij,jk->ik", value<I32<[2, 4]>>(), value<I32<[4, 3]>>()));
// Placement as for matmul: a server operand with a local constant stays at the server.
expectType<F32<["B", 10], "server">>(einsum("bi,io->bo", value<F32<["B", 784], "server">>(), w));
// A dim known only at run time takes the other operand's, and is checked when tracing.
expectType<F32<["B", 10]>>(einsum("bi,io->bo", x, value<F32<[number, 10]>>()));
// An equation that is not a literal has a shape known only at run time.
declare const equation: string;
expectType<F32<(string | number)[]>>(einsum(equation, x, w));

// numpy's implicit output: the letters that occur once, in alphabetical order (capitals first).
expectType<F32<["B", 10]>>(einsum("bi,io", x, w));
// Sorted, not in the order the letters appear: "bo", so [B, 10].
expectType<F32<["B", 10]>>(einsum("oj,jb", value<F32<[10, 784]>>(), value<F32<[784, "B"]>>()));
expectType<F32<[784, "B"]>>(einsum("ji", x));
expectType<F32<[]>>(einsum("i,i", u, u));
expectType<F32<[5, 7]>>(einsum("Z,a", u, v));

// ---- FT212: equations that are not supported or do not fit their operands -------------------

expectError(einsum("ii", value<F32<[5, 5]>>()));
expectError(einsum("...i,io->...o", x, w));
expectError(einsum("ii->i", value<F32<[5, 5]>>()));
expectError(einsum("hqd,hkd->hqk", q, k));
expectError(einsum("bi,io->bz", x, w));
expectError(einsum("bi->b", x, x));
expectError(einsum("ij,jk,kl->il", x, w, w));
expectError(einsum("b i,io->bo", x, w));
expectError(einsum("bi,io->bb", x, w));

// ---- FT213: an index sized differently by the two operands ----------------------------------

expectError(einsum("bi,oi->bo", x, w));
expectError(einsum("bhqd,bhqd->bhq", q, value<F32<["B", 4, 12, 16]>>()));
expectError(einsum("i,i->", u, v));

// ---- dtypes and placements as matmul's (FT205, FT104) --------------------------------------

expectError(einsum("i,i->", u, value<I32<[5]>>()));
expectError(einsum("ij->i", value<Bool<[2, 3]>>()));
expectError(einsum("bi,io->bo", value<F32<["B", 784], "clients">>(), value<F32<[784, 10], "server">>()));
