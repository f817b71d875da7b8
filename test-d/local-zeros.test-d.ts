/**
 * localZeros: local zeros with each leaf's shape and dtype, whatever the placement of what it
 * is shaped like (private client data included), so they serve as a scan's local carry.
 */
import { expectType } from "tsd";
import { atClients, atServer, f32, i32, localZeros, map, program, type Tensor } from "../dist/src/index.js";

program({ w: atServer(f32([2, 3])), n: atServer(i32(["K"])), x: atClients(f32(["N", 4]), { private: true }) }, ({ w, n, x }) => {
  expectType<Tensor<[2, 3], "float32", "local">>(localZeros(w));
  expectType<{ w: Tensor<[2, 3], "float32", "local">; inner: [Tensor<["K"], "int32", "local">] }>(localZeros({ w, inner: [n] as [typeof n] }));
  map((xm) => {
    expectType<Tensor<["N", 4], "float32", "local">>(localZeros(xm));
    return xm;
  }, x);
  return w;
});
