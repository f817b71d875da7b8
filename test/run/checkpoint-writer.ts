/**
 * Child process for the kill test: writes checkpoints of a growing round number into the
 * folder given as its argument, forever, printing "wrote <round>" after each one is in
 * place. The test kills it with SIGKILL at a random moment. Every tensor value equals the
 * round, so the test can tell that a loaded checkpoint is whole and of the round it claims.
 */
import { loadLatestCheckpoint, writeCheckpoint } from "../../src/lib/run/checkpoint.js";

const dir = process.argv[2]!;
// Large enough that writing takes a while, so kills often land mid-write.
const values = 1 << 20;
// One array refilled each round: a fresh one would spend most of the loop faulting in pages.
const data = new Float32Array(values);
const latest = await loadLatestCheckpoint(dir);
for (let round = (latest?.checkpoint.round ?? 0) + 1; ; round++) {
  const state = { layer: { w: { shape: [values / 4, 4], data: data.fill(round) } } };
  await writeCheckpoint(dir, { round, serverState: state, rngState: { round }, config: { seed: 0 } }, { keep: 2 });
  process.stdout.write(`wrote ${round}\n`);
}
