/**
 * A private value captured by a localTrain hook makes the trained parameters private: tsc
 * sees it through the hook's result type (test-d/lib-privacy.test-d.ts), and tracing sees it
 * too, with the types bypassed, so their plain mean is FT109 before anything runs.
 */
import { expect, test } from "vitest";
import { atClients, atServer, broadcast, f32, i32, map, mul, program, reduceMean, sum } from "../../src/index.js";
import { localTrain, sgd } from "../../src/lib/index.js";
import { tiny } from "./helpers.js";

const inputs = {
  params: atServer(tiny.params),
  x: atClients(f32(["S", "B", 2])),
  y: atClients(i32(["S", "B"])),
  mask: atClients(f32(["S", "B"])),
  secret: atClients(f32([]), { private: true }),
};

test("a private value captured by a localTrain hook is FT109 while tracing when the result is averaged", () => {
  const leak = () =>
    program(inputs, ({ params, x, y, mask, secret }) =>
      reduceMean(
        map(
          (w, cx, cy, cm, s) => localTrain(tiny, w, { x: cx, y: cy, mask: cm }, (lr) => sgd(lr), 0.1, { extra: (p) => mul(sum(p.w), s) as never }).params,
          broadcast(params),
          x,
          y,
          mask,
          secret,
        ),
      ),
    );
  expect(leak).toThrow(/FT109/);
});

test("without the captured value the same program traces", () => {
  const fine = program(inputs, ({ params, x, y, mask }) =>
    reduceMean(map((w, cx, cy, cm) => localTrain(tiny, w, { x: cx, y: cy, mask: cm }, (lr) => sgd(lr), 0.1).params, broadcast(params), x, y, mask)),
  );
  expect(fine.aggregators).toEqual(["reduceMean"]);
});
