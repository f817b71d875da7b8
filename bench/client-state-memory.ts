/**
 * bench/client-state-memory: the memory that client state costs `fedtensor run`
 * (src/lib/run/client-state.ts) for 1,000 and 10,000 clients, each keeping FedPer's state of
 * the 2NN with its last two layers personal (w2, b2, w3, b3: 42,410 float32, 166 KiB a client;
 * 1.6 GiB for 10,000 clients).
 *
 * Each size runs in a fresh process: rounds of 100 clients sampled from the cohort (seeded),
 * as the runner does them: the cohort's states stacked from the store (a client never seen
 * from the initial state), moved by one local step's worth of change, staged and committed,
 * until every client has a state, then as many rounds again; then a checkpoint of every
 * client's state (its companion file, src/lib/run/client-state-file.ts, written client by
 * client) and a resume's read of it into a store of the same budget. Printed: the process's peak
 * RSS (the kernel's high-water mark, over the rounds, the checkpoint and the resume), the store's
 * own peak in memory and the states on disk, the checkpoint file's size and its write and read
 * seconds, with the memory budget (--state-memory) and with none (every state in memory).
 *
 * usage: node dist/bench/client-state-memory.js [--clients 1000,10000] [--budget-mib 64]
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { ClientStateStore, stackedStates, type ClientState } from "../src/lib/run/client-state.js";
import { readClientStates, writeClientStates } from "../src/lib/run/client-state-file.js";
import { Rng } from "../src/lib/random.js";

const { values } = parseArgs({
  options: {
    clients: { type: "string", default: "1000,10000" },
    "budget-mib": { type: "string", default: "64" },
    child: { type: "string" },
    budget: { type: "string" },
  },
});

const cohortSize = 100;
const shapes: Record<string, number[]> = { w2: [200, 200], b2: [200], w3: [200, 10], b3: [10] };
const initial: ClientState = Object.fromEntries(Object.entries(shapes).map(([name, shape]) => [name, { shape, data: new Float32Array(shape.reduce((a, b) => a * b, 1)).fill(0.01) }]));

/** One size in this process: prints a JSON line of what it measured. */
async function measure(clients: number, budgetBytes: number): Promise<void> {
  const store = new ClientStateStore(budgetBytes);
  const rng = Rng.fromSeed(1);
  const started = performance.now();
  const rounds = 2 * Math.ceil(clients / cohortSize);
  for (let round = 0; round < rounds; round++) {
    // The first half of the rounds reaches every client once; the second samples at random.
    const cohort = round < rounds / 2 ? Array.from({ length: cohortSize }, (_, i) => (round * cohortSize + i) % clients) : Array.from({ length: cohortSize }, () => Math.floor(rng.float() * clients));
    const unique = [...new Set(cohort)];
    const stacked = stackedStates(store, unique, initial);
    unique.forEach((client, row) => {
      const state: Record<string, { shape: number[]; data: Float32Array }> = {};
      for (const [name, { shape, data }] of Object.entries(stacked)) {
        const size = data.length / unique.length;
        const own = data.slice(row * size, (row + 1) * size);
        for (let i = 0; i < own.length; i++) own[i] = own[i]! + 1e-3 * (client % 7);
        state[name] = { shape: shape.slice(1), data: own };
      }
      store.stage(client, state);
    });
    store.commit();
  }
  const roundSeconds = (performance.now() - started) / 1000;
  const dir = mkdtempSync(join(tmpdir(), "fedtensor-bench-checkpoint-"));
  const checkpoint = join(dir, "checkpoint-00000001.safetensors");
  const writing = performance.now();
  const ref = (await writeClientStates(join(dir, "checkpoint-00000001.clients.safetensors"), store, 1))!;
  const writeSeconds = (performance.now() - writing) / 1000;
  const reading = performance.now();
  const resumed = await readClientStates(checkpoint, ref, budgetBytes);
  const readSeconds = (performance.now() - reading) / 1000;
  // The resumed store holds what the run's did: every client, the last one bit for bit.
  const last = clients - 1;
  if (resumed.size !== store.size || Object.keys(initial).some((name) => resumed.get(last)![name]!.data.some((v, i) => !Object.is(v, store.get(last)![name]!.data[i])))) throw new Error("the resumed states differ");
  resumed.close();
  rmSync(dir, { recursive: true, force: true });
  const oneDecimal = (x: number) => Math.round(x * 10) / 10;
  const line = {
    clients,
    budgetMiB: Number.isFinite(budgetBytes) ? budgetBytes / 2 ** 20 : "none",
    rounds,
    peakRssMiB: Math.round(process.resourceUsage().maxRSS / 1024),
    storePeakMiB: Math.round(store.peakBytes / 2 ** 20),
    spilled: store.spilledCount,
    seconds: oneDecimal(roundSeconds),
    checkpointMiB: Math.round(ref.bytes / 2 ** 20),
    writeSeconds: oneDecimal(writeSeconds),
    readSeconds: oneDecimal(readSeconds),
  };
  store.close();
  console.log(JSON.stringify(line));
}

if (values.child !== undefined) {
  await measure(Number(values.child), values.budget === "none" ? Infinity : Number(values.budget));
} else {
  const self = fileURLToPath(import.meta.url);
  const budget = String(Number(values["budget-mib"]) * 2 ** 20);
  console.log("| clients | budget (MiB) | rounds | peak RSS (MiB) | store peak in memory (MiB) | states on disk | rounds (s) | checkpoint (MiB) | write (s) | resume read (s) |");
  console.log("|---|---|---|---|---|---|---|---|---|---|");
  for (const clients of values.clients.split(",").map(Number)) {
    for (const b of [budget, "none"]) {
      const run = spawnSync(process.execPath, [self, "--child", String(clients), "--budget", b], { encoding: "utf8" });
      if (run.status !== 0) throw new Error(run.stderr);
      const r = JSON.parse(run.stdout.trim()) as Record<string, unknown>;
      console.log(`| ${r.clients} | ${r.budgetMiB} | ${r.rounds} | ${r.peakRssMiB} | ${r.storePeakMiB} | ${r.spilled} | ${r.seconds} | ${r.checkpointMiB} | ${r.writeSeconds} | ${r.readSeconds} |`);
    }
  }
}
