/**
 * Bounds on what a client claims, checked at the boundary before the server acts on it
 * (docs/deployment.md, "Bounds on client claims"). The schemas (protocol/messages.ts) bound
 * every field's type and length; here are the bounds that depend on the run:
 *
 * - `ready.examples`: at most --max-client-examples, by default the largest client of the run's
 *   own partition of its data set. The claim sets the client's steps (the size of the part the
 *   server compiles for it: steps x batch x features values) and, in secure rounds, the cohort's
 *   public scale (1 / the largest claim), so an unbounded claim could exhaust the server's
 *   memory or shrink every other client's contribution to nothing after quantization.
 *
 * A claim out of bounds is FT350: logged, and the client refused (it would make the same claim
 * again). Text a client sends that reaches the log (a failure's reason) has its control
 * characters escaped, so that no client can forge or break log lines.
 */
import { ftError } from "../../errors/error.js";

export interface ClaimBounds {
  /** The most examples a client may claim in `ready`. */
  readonly maxExamples: number;
}

/** The default --max-client-examples: the largest client of the run's partition (its clients' example counts). */
export function defaultMaxExamples(clientSizes: readonly { length: number }[]): number {
  return Math.max(1, ...clientSizes.map((c) => c.length));
}

/** FT350's message for a `ready` claim above the bound; undefined when it is within. */
export function examplesClaimProblem(client: string, examples: number, bounds: ClaimBounds): string | undefined {
  if (examples <= bounds.maxExamples) return undefined;
  return ftError("FT350", { client, claim: `${examples} examples`, bound: `at most ${bounds.maxExamples} (--max-client-examples)` }).message;
}

/** `text` with control characters (newlines included) escaped, for a log line. */
export function printable(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}
