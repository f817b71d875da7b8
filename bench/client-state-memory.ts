/**
 * bench/client-state-memory: the memory that client state costs `fedtensor run`
 * (src/lib/run/client-state.ts) for 1,000 and 10,000 clients, each keeping FedPer's state of
 * the 2NN with its last two layers personal (w2, b2, w3, b3: 42,410 float32, 166 KiB a client;
 * 1.6 GiB for 10,000 clients).
 *
 * Each size runs in a fresh process: rounds of 100 clients sampled from the cohort (seeded),
 * as the runner does them: the cohort's states stacked from the store (a client never seen
 * from the initial state), moved by one local step's worth of change, staged and committed,
 * until every client has a state, then as many rounds again. Printed: the process's peak RSS
 * (the kernel's high-water mark), the store's own peak in memory and the states on disk, with
 * the memory budget (--state-memory) and with none (every state in memory).
 *
 * usage: node dist/bench/client-state-memory.js [--clients 1000,10000] [--budget-mib 64]
 */
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { ClientStateStore, stackedStates, type ClientState } from "../src/lib/run/client-state.js";
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
function measure(clients: number, budgetBytes: number): void {
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
  const line = {
    clients,
    budgetMiB: Number.isFinite(budgetBytes) ? budgetBytes / 2 ** 20 : "none",
    rounds,
    peakRssMiB: Math.round(process.resourceUsage().maxRSS / 1024),
    storePeakMiB: Math.round(store.peakBytes / 2 ** 20),
    spilled: store.spilledCount,
    seconds: Math.round((performance.now() - started) / 100) / 10,
  };
  store.close();
  console.log(JSON.stringify(line));
}

if (values.child !== undefined) {
  measure(Number(values.child), values.budget === "none" ? Infinity : Number(values.budget));
} else {
  const self = fileURLToPath(import.meta.url);
  const budget = String(Number(values["budget-mib"]) * 2 ** 20);
  console.log("| clients | budget (MiB) | rounds | peak RSS (MiB) | store peak in memory (MiB) | states on disk | seconds |");
  console.log("|---|---|---|---|---|---|---|");
  for (const clients of values.clients.split(",").map(Number)) {
    for (const b of [budget, "none"]) {
      const run = spawnSync(process.execPath, [self, "--child", String(clients), "--budget", b], { encoding: "utf8" });
      if (run.status !== 0) throw new Error(run.stderr);
      const r = JSON.parse(run.stdout.trim()) as Record<string, unknown>;
      console.log(`| ${r.clients} | ${r.budgetMiB} | ${r.rounds} | ${r.peakRssMiB} | ${r.storePeakMiB} | ${r.spilled} | ${r.seconds} |`);
    }
  }
}
