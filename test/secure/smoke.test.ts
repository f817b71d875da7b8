import { expect, test } from "vitest";
import { atClients, atServer, f32, i32, program, secureSum } from "../../src/index.js";
import { BACKENDS, runOn } from "../random/helpers.js";

test("smoke", async () => {
  const p = program({ key: atServer(i32([2])), x: atClients(f32([3])), n: atClients(i32([2])) }, ({ key, x, n }) => ({
    s: secureSum(x, { bits: 20, key, range: [-1, 1], scale: 1000 }),
    t: secureSum(n, { bits: 16, key, range: [0, 100] }),
  }));
  console.log(p.signature);
  const inputs = { key: [3, 4], x: [[0.1, 0.2, -0.3], [0.5, 0.5, 0.5], [-1, 1, 0.25], [0.3, 0.3, 0.3]], n: [[1, 2], [3, 4], [5, 6], [7, 8]] };
  const ref = await runOn("reference", p, inputs);
  console.log(ref);
  for (const b of BACKENDS) console.log(b, await runOn(b, p, inputs));
});
