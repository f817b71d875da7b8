/**
 * `fedtensor serve --aggregator secure` killed with SIGKILL at each step of a secure round and
 * resumed with --resume: the resumed server sets the round up again under a new SecAgg+ session,
 * the clients (which kept their state for that round) take part again, and the round is merged
 * once, with every client, in the metrics.
 *
 * The kill is deterministic: each client connects through a relay (bench/step-trap.ts) that,
 * when the server's request for the step passes on its way to the client, kills the server and
 * drops the connection, so no client sees a request of that step from the first server. The
 * relays outlive the server; once the resumed server starts they pass everything.
 * Needs `npm run build` (bin/ runs dist/).
 */
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { readMetrics } from "../../src/lib/run/metrics.js";
import { deadline } from "../helpers/deadline.js";
import { serverUrl, smallServe, startProcess, type Process } from "./serve-helpers.js";
import { killedAfterAll, serveWithFiles, startFileClient, stepTrap } from "./serve-kill-helpers.js";

const { track, traps } = killedAfterAll();
/** The smallest SecAgg+ cohort with a majority threshold below it: 3 shares, 2 rebuild a secret. */
const CLIENTS = 3;

describe("fedtensor serve --aggregator secure killed mid-round and resumed", () => {
  for (const step of ["setup", "share-keys", "masked-input", "consistency-check", "unmask"] as const) {
    it(`killed as it sends round 2's ${step} requests, resumes and merges round 2 with all ${CLIENTS} clients`, async () => {
      const options = ["--model", "logistic", "--aggregator", "secure", "--rounds", "2", "--clients-per-round", String(CLIENTS), "--min-clients", String(CLIENTS)];
      const { out, tokens, files, server, url } = await serveWithFiles(track, `fedtensor-serve-resume-${step}-`, CLIENTS, ...options);
      let resumed: Process | undefined;
      const clients: Process[] = [];
      for (let i = 0; i < CLIENTS; i++) {
        // Every relay kills the first server at the step (a second kill is a no-op), so no client sees that step's request.
        const trap = await stepTrap(url, 2, step, () => (resumed === undefined ? server.child : undefined));
        traps.push(trap);
        clients.push(track(startFileClient(trap.url, tokens[i]!, files[i]!)));
      }
      await Promise.race(traps.slice(-CLIENTS).map((t) => t.sprung));
      expect(await server.exited()).toBeNull(); // killed, not exited
      expect(server.child.signalCode).toBe("SIGKILL");
      expect(server.output()).toMatch(new RegExp(`round 1/2: ${CLIENTS} of ${CLIENTS} clients merged`));
      const port = new URL(url).port;
      const args = smallServe(join(out, "..", "tokens.txt"), out, ...options).filter((a) => a !== "--overwrite").map((a) => (a === "0" ? port : a));
      resumed = track(startProcess([...args, "--resume"]));
      await serverUrl(resumed);
      expect(await resumed.exited()).toBe(0);
      const log = resumed.output();
      expect(log).toMatch(/resumed from round 1/);
      expect(log).toMatch(new RegExp(`round 2: secure sum of ${CLIENTS} clients\n`));
      expect(log).toMatch(new RegExp(`round 2/2: ${CLIENTS} of ${CLIENTS} clients merged`));
      // Every round once in the metrics, round 2 with every client and no dropout.
      expect(readMetrics(join(out, "metrics.jsonl")).map((r) => [r.round, r.clients, r.dropped])).toEqual([
        [1, CLIENTS, 0],
        [2, CLIENTS, 0],
      ]);
      // No client refused the resumed server's setup or left.
      for (const c of clients) expect(c.output()).not.toMatch(/FT33[68]|FT356|second secure-sum setup/);
    }, deadline(240_000));
  }
});
