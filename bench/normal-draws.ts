/**
 * bench/normal-draws: what a normal draw costs, timed in one process, as ratios (machines
 * here are noisy: compare ratios, not seconds).
 *
 * normal(key, [N]) takes one Threefry block (two words) a value and the float32-only inverse
 * CDF of src/ir/normal.ts; uniform(key, [N]) and uniform(key, [2N]) run alongside as the cost
 * of the words alone. With --baseline DIR (another build's dist/src, e.g. of the commit
 * before a sampler change) its normal(key, [N]) runs alongside too: old against new in one
 * process. Variants alternate; the median of each is reported, per backend.
 *
 * usage: node dist/bench/normal-draws.js [--rounds N] [--size N] [--baseline path/to/dist/src]
 */
import { parseArgs } from "node:util";
import * as fedtensor from "../src/index.js";
import { median } from "./stats.js";

const { values } = parseArgs({
  options: { rounds: { type: "string", default: "7" }, size: { type: "string", default: "1000000" }, baseline: { type: "string" } },
});
const [rounds, size] = [Number(values.rounds), Number(values.size)];
type Library = Pick<typeof fedtensor, "program" | "atServer" | "i32" | "normal" | "uniform">;
const baseline = values.baseline === undefined ? undefined : ((await import(`${values.baseline}/index.js`)) as Library);

function drawing(lib: Library, draw: (key: never) => unknown) {
  return lib.program({ key: lib.atServer(lib.i32([2])) }, ({ key }) => ({ out: draw(key as never) as never }));
}
const variants: Record<string, ReturnType<typeof drawing>> = {
  [`normal [${size}]`]: drawing(fedtensor, (key) => fedtensor.normal(key, [size])),
  [`uniform [${size}]`]: drawing(fedtensor, (key) => fedtensor.uniform(key, [size])),
  [`uniform [${2 * size}]`]: drawing(fedtensor, (key) => fedtensor.uniform(key, [2 * size])),
  ...(baseline === undefined ? {} : { [`baseline normal [${size}]`]: drawing(baseline, (key) => baseline.normal(key, [size])) }),
};

for (const backend of ["onnx", "wasm", "cpu"] as const) {
  const times: Record<string, number[]> = Object.fromEntries(Object.keys(variants).map((k) => [k, []]));
  for (let r = -1; r < rounds; r++) {
    for (const [name, p] of Object.entries(variants)) {
      const start = performance.now();
      const { out } = (await p.run({ key: [r + 1, 7] } as never, { backend, workers: 0 })) as { out: { data(): Promise<unknown>; dispose(): void } };
      await out.data();
      out.dispose();
      if (r >= 0) times[name]!.push((performance.now() - start) / 1000);
    }
  }
  const reference = median(times[`uniform [${size}]`]!);
  console.log(`${backend}, median of ${rounds}, ratios against uniform [${size}]`);
  for (const [name, t] of Object.entries(times)) console.log(`  ${name.padEnd(28)} ${median(t).toFixed(3)} s  x${(median(t) / reference).toFixed(2)}`);
}
