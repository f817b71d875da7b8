/**
 * Client state in `fedtensor run`: FedPer keeps each client's head and Ditto each client's
 * personal model between rounds, with the clip,dp and secure chains (the state is private
 * there: it stays with its client, and only the chain's release of the shared deltas reaches
 * the server). SCAFFOLD and resuming: scaffold-state-run.test.ts.
 */
import { describe, test } from "vitest";
import { checkKeptStates } from "./client-state-helpers.js";
import { deadline } from "../helpers/deadline.js";

describe.each([
  ["fedper", { algorithm: "fedper", personalParams: "b" }, ["b"]],
  ["ditto", { algorithm: "ditto", dittoLambda: 0.5 }, ["w", "b"]],
] as const)("%s keeps each client's state", (_name, algorithm, kept) => {
  test.each([
    ["clip,dp", { aggregator: "clip,dp", dpNoise: 0.5, dpClip: 1 }],
    ["secure", { aggregator: "secure" }],
  ] as const)("with %s: the states differ per client and survive the rounds their clients sit out", (_chain, chain) => checkKeptStates(algorithm, kept, chain), deadline(60_000));
});
