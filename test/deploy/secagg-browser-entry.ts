/**
 * Bundled by secagg-browser.test.ts for a chromium page: a whole SecAgg+ round (server and
 * clients in the page, through the wire format), to show that the core runs in a browser with
 * WebCrypto's randomness and no Node API.
 */
import { type ClientMessage, SecAggClient, SecAggServer, encodeMessage } from "../../src/deploy/secagg/index.js";

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

(globalThis as unknown as { runSecAggRound: typeof runSecAggRound }).runSecAggRound = runSecAggRound;
