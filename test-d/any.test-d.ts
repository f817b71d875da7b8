/**
 * A value typed `any` opts out of the static checks, as anywhere in TypeScript: operations on
 * it type-check without errors (and without TS2589 from walking `any` as a tree); tracing
 * still checks it at run time.
 */
import { expectError, expectType } from "tsd";
import { add, atClients, atServer, broadcast, f32, grad, map, mul, program, reduceMean, sum } from "../dist/src/index.js";

declare const anything: any;

expectType<any>(add(anything, 1));
expectType<any>(mul(2, anything));
program({ w: atServer(f32([3])), x: atClients(f32([3])) }, ({ w, x }) => {
  expectType<any>(add(w, anything));
  broadcast(anything);
  map((m: any) => mul(m, 2), x);
  const loss = (v: any) => reduceMean(map((m: any) => sum(m), broadcast(v)));
  // The gradient has the type of the differentiated argument as the function declares it.
  expectType<any>(grad(loss)(w));
  // Typed values keep their checks next to `any` ones.
  expectError(add(w, x));
  return w;
});
