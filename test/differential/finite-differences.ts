/**
 * Checking gradients against central finite differences of the loss, evaluated by the
 * reference interpreter in float64: (f(p + h e_j) - f(p - h e_j)) / 2h for every entry j of
 * every parameter, with h = 1e-6. In float64 that is accurate to about 1e-7 relative (rounding
 * 1e-16 / h, truncation h^2 f'''), far inside the tolerance of compare.ts.
 *
 * Where the loss has a kink within h of p (relu, abs, max, clip or where at a tie), the
 * derivative is undefined and finite differences say nothing: the one-sided differences then
 * disagree by the size of the jump, and the entry is skipped (and counted, so that a test can
 * require skips to be rare). A smooth loss has one-sided differences within h * |f''| of each
 * other, far below the threshold.
 *
 * A jump exactly at p can hide from that test: a gradient taken inside the loss, of a max at
 * a tie, shares the cotangent between the tied entries, so f(p) lies halfway between the two
 * sides and both one-sided differences see half the jump. The central difference then grows
 * as 1/h, so it is also compared with the central difference over 10h, which for a smooth
 * loss agrees to about 17 h^2 |f'''|.
 *
 * A tie inside a gradient the loss takes can leave the loss smooth at a point where automatic
 * differentiation gives another derivative: at maximum(x, y) with x = y exactly, the inner gradient
 * takes one side, while the loss around the point follows the other. Both are right about
 * different functions, so such a disagreement is tie-sensitive (ties.ts): discarded, counted.
 */
import { interpret, type OutputLeaf, type OutputTree } from "../../src/interpret/reference.js";
import { close, largest, TOLERANCE, type HostLeaf } from "./compare.js";
import { report, TieSensitive } from "./harness.js";
import { nearTie } from "./ties.js";
import type { GeneratedGradient } from "./programs.js";

const STEP = 1e-6;

export interface FiniteDifferenceCount {
  /** Entries whose gradient agreed with the finite difference. */
  readonly checked: number;
  /** Entries where the loss has a kink within the step: no derivative to compare with. */
  readonly skipped: number;
}

/** Checks `reference.grads` (the reference interpreter's gradients) against finite differences of g's loss; throws a report on disagreement. */
export function checkFiniteDifferences(g: GeneratedGradient, reference: OutputTree): FiniteDifferenceCount {
  const lossAt = (inputs: Record<string, unknown>): number => {
    const [loss] = interpret(g.lossProgram.ir, inputs as never, { clients: g.clients }) as OutputLeaf[];
    return loss!.data[0]!;
  };
  const { value, grads } = reference as { value?: OutputLeaf; grads: OutputLeaf[] };
  const base = lossAt(g.inputs);
  if (value !== undefined && !close(value.data[0]!, base, Math.abs(base))) {
    throw report(g, `valueAndGrad's value ${value.data[0]} is not the loss ${base} (reference interpreter)`);
  }
  let checked = 0;
  let skipped = 0;
  g.params.forEach((name, i) => {
    const param = g.inputs[name] as HostLeaf;
    const gradient = grads[i]!;
    const moved = (j: number, by: number) => {
      const data = Array.from(param.data);
      data[j] = data[j]! + by;
      return lossAt({ ...g.inputs, [name]: { shape: param.shape, data } });
    };
    for (let j = 0; j < param.data.length; j++) {
      const [up, down] = [moved(j, STEP), moved(j, -STEP)];
      const [forward, backward] = [(up - base) / STEP, (base - down) / STEP];
      const central = (up - down) / (2 * STEP);
      const wider = (moved(j, 10 * STEP) - moved(j, -10 * STEP)) / (20 * STEP);
      const threshold = TOLERANCE * Math.max(1, Math.abs(central));
      if (Math.abs(forward - backward) > threshold || Math.abs(central - wider) > threshold) {
        skipped++;
        continue;
      }
      if (!close(gradient.data[j]!, central, largest(gradient.data))) {
        const what = `gradient of ${name} entry ${j}: reference interpreter ${gradient.data[j]}, finite difference ${central}`;
        const tie = nearTie(g);
        if (tie === undefined) throw report(g, what);
        throw new TieSensitive(report(g, `${what}\nbut the program decides on a near tie (${tie})`).message);
      }
      checked++;
    }
  });
  return { checked, skipped };
}
