/**
 * SCAFFOLD's control variates as client state in `fedtensor run`, with the clip,dp and secure
 * chains (one release of the updates and control changes; the controls stay with their
 * clients), and a resumed run of client state that continues bit for bit from its checkpoint
 * and the checkpoint's companion file of client states.
 */
import { describe, expect, test } from "vitest";
import { listCheckpoints, readCheckpoint } from "../../src/lib/run/checkpoint.js";
import { train } from "../../src/lib/run/train.js";
import { checkKeptStates, configOf, quiet, stateWithClients } from "./client-state-helpers.js";
import { deadline } from "../helpers/deadline.js";

describe("scaffold keeps each client's controls", () => {
  test.each([
    ["clip,dp", { aggregator: "clip,dp", dpNoise: 0.5, dpClip: 1 }],
    ["secure", { aggregator: "secure" }],
  ] as const)("with %s: they differ per client and survive the rounds their clients sit out", (_chain, chain) => checkKeptStates({ algorithm: "scaffold" }, ["w", "b"], chain), deadline(60_000));
});

test("a resumed FedPer run's client states and model are bit-identical to an uninterrupted run's, its states spilled and checkpointed client by client", async () => {
  const straight = configOf("ft-state-straight-", { algorithm: "fedper", personalParams: "b", rounds: 2 });
  await train(straight, quiet);
  // --state-memory 0: every state spills, so the checkpoint's companion file is written from disk, and read back into a store that spills.
  const first = configOf("ft-state-resumed-", { algorithm: "fedper", personalParams: "b", rounds: 1, stateMemory: 0 });
  await train(first, quiet);
  const round1 = (await listCheckpoints(first.out)).at(-1)!.path;
  expect((await readCheckpoint(round1)).clientStates).toMatchObject({ file: "checkpoint-00000001.clients.safetensors", clients: 4 });
  await train({ ...first, rounds: 2, resume: true }, quiet);
  const [a, b] = await Promise.all([straight.out, first.out].map(async (out) => stateWithClients((await listCheckpoints(out)).at(-1)!.path)));
  expect(b).toEqual(a);
  expect(Object.keys((a as { clients: object }).clients).length).toBeGreaterThan(4);
}, deadline(60_000));
