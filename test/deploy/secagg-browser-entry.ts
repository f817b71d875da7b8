/**
 * Bundled by secagg-browser.test.ts for a chromium page: a whole SecAgg+ round (server and
 * clients in the page, through the wire format), to show that the core runs in a browser with
 * WebCrypto's randomness and no Node API.
 */
import { type ClientMessage, type ReusedKeys, SecAggClient, SecAggRounds, SecAggServer, encodeMessage } from "../../src/deploy/secagg/index.js";

async function runSecAggRound(n: number, length: number, dropAfterMasking: number) {
  const ids = Array.from({ length: n }, (_, i) => `tab-${i}`);
  const vectors = new Map(ids.map((id) => [id, Float32Array.from({ length }, () => Math.random() * 2 - 1)]));
  const server = new SecAggServer(
    { round: 1, vector_length: length, num_shares: n, reconstruction_threshold: Math.floor(n / 2) + 1, clipping_range: 1, quantization_range: 2 ** 20, modulus_range: 2 ** 32 },
    ids,
  );
  const clients = new Map<string, SecAggClient>();
  const deliver = (id: string, m: ClientMessage) => {
    const verdict = server.receive(id, encodeMessage(m));
    if (!verdict.accepted) throw new Error(verdict.reason);
  };
  for (const [id, setup] of server.start()) {
    const client = SecAggClient.fromSetup(encodeMessage(setup));
    clients.set(id, client);
    deliver(id, client.advertiseKeys());
  }
  for (;;) {
    const outcome = await server.advance();
    if (outcome.kind === "aborted") return { kind: outcome.kind, reason: outcome.reason };
    if (outcome.kind === "done") {
      let maxError = 0;
      for (let i = 0; i < length; i++) {
        let want = 0;
        for (const id of ids) want += vectors.get(id)![i]!;
        maxError = Math.max(maxError, Math.abs(outcome.result.sum[i]! - want));
      }
      return { kind: outcome.kind, clients: outcome.result.clients, maxError, userAgent: (globalThis as { navigator?: { userAgent: string } }).navigator?.userAgent };
    }
    for (const [id, message] of outcome.messages) {
      if (outcome.step === "unmask" && ids.indexOf(id) < dropAfterMasking) continue;
      deliver(id, await clients.get(id)!.respond(encodeMessage(message), () => vectors.get(id)!));
    }
  }
}

/**
 * `rounds` rounds of one cohort with the clients' SecAggRounds (what every tab's client core
 * keeps) and key_rounds = rounds: the steps each round's clients answered, and each sum's error.
 */
async function runReusedRounds(n: number, length: number, rounds: number) {
  const ids = Array.from({ length: n }, (_, i) => `tab-${i}`);
  const clients = new Map(ids.map((id) => [id, new SecAggRounds()]));
  const out: { steps: string[]; maxError: number }[] = [];
  let reuse: ReusedKeys | undefined;
  for (let round = 1; round <= rounds; round++) {
    const vectors = new Map(ids.map((id) => [id, Float32Array.from({ length }, () => Math.random() * 2 - 1)]));
    const params = { round, vector_length: length, num_shares: n, reconstruction_threshold: Math.floor(n / 2) + 1, clipping_range: 1, quantization_range: 2 ** 20, modulus_range: 2 ** 32, key_rounds: rounds };
    const server = new SecAggServer(params, ids, reuse === undefined ? {} : { reuse });
    const steps: string[] = [];
    let requests: ReadonlyMap<string, object> = server.start();
    for (;;) {
      for (const [id, message] of requests) {
        const answer = await clients.get(id)!.respond(round, encodeMessage(message as never), () => vectors.get(id)!);
        if (id === ids[0]) steps.push(answer.step);
        const verdict = server.receive(id, encodeMessage(answer));
        if (!verdict.accepted) throw new Error(verdict.reason);
      }
      const outcome = await server.advance();
      if (outcome.kind === "aborted") throw new Error(outcome.reason);
      if (outcome.kind === "done") {
        let maxError = 0;
        for (let i = 0; i < length; i++) maxError = Math.max(maxError, Math.abs(outcome.result.sum[i]! - ids.reduce((sum, id) => sum + vectors.get(id)![i]!, 0)));
        out.push({ steps, maxError });
        break;
      }
      requests = outcome.messages;
    }
    reuse = server.reusable();
  }
  return out;
}

Object.assign(globalThis, { runSecAggRound, runReusedRounds });
