/**
 * bench/serve-demo: issue 22's demonstration, on this machine over 127.0.0.1.
 * `fedtensor serve fedavg-mnist --aggregator secure --min-clients 8` with 20 `fedtensor client`
 * processes (each with its partition in a record file, --data) and 2 headless chromium tabs
 * (demo partitions 20 and 21), 2NN, 20 rounds, 10 clients a round. During round 5, once every
 * cohort member has sent its masked input (the server sends the unmask step), 30% of the
 * cohort's client processes are killed with SIGKILL: the round completes by recovery, and they
 * are started again. After round 10's checkpoint the server is killed with SIGKILL and started
 * again with --resume: it continues while the clients reconnect. Last, the same settings run in
 * one process (`fedtensor run`, secure aggregation simulated) for the accuracy to compare with.
 *
 * usage: npm run build && node dist/bench/serve-demo.js [--rounds 20] [--no-browser] [--key-rounds K] [--client-threads N|default] [--aggregator secure]
 *   (--key-rounds: the server's, SecAgg+ keys reused for up to K rounds; 1, a full setup every round, by default)
 *   (--aggregator: the chain served and simulated, `secure` by default; `fedavg` shows what the secure sum adds,
 *   with no SecAgg+ steps and so no clients killed at round 5's unmask step)
 *   (--client-threads N|default: each node client's onnxruntime threads, `fedtensor client --threads N`; 1 by
 *   default, as 20 clients share 2 cores here: onnxruntime's default, one per core, measured 1.2-1.4x slower: docs/benchmarks.md)
 * Prints a summary (figures in docs/benchmarks.md, "Real clients").
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { encodeRecord } from "../src/deploy/protocol/record.js";
import { readMetrics } from "../src/lib/run/metrics.js";
import { stepTrap, type StepTrap } from "./step-trap.js";
import { federatedData } from "../src/lib/run/setup.js";
import { median } from "./stats.js";

const root = join(dirname(fileURLToPath(import.meta.url)), "../..");
const cli = join(root, "bin/fedtensor.js");
const { values } = parseArgs({
  options: {
    rounds: { type: "string", default: "20" },
    "no-browser": { type: "boolean", default: false },
    "key-rounds": { type: "string" },
    "client-threads": { type: "string", default: "1" },
    aggregator: { type: "string", default: "secure" },
  },
});
const aggregator = values.aggregator!;
const rounds = Number(values.rounds) || 20;
const keyRounds = values["key-rounds"] === undefined ? [] : ["--key-rounds", values["key-rounds"]];
const clientThreadsOption = values["client-threads"];
const clientThreads = clientThreadsOption === "default" ? [] : ["--threads", clientThreadsOption];
const browsers = values["no-browser"] || !existsSync("/usr/bin/chromium") ? 0 : 2;
const nodeClients = 20;
const clients = nodeClients + browsers;
const killRound = 5;
/** 30% of a round's 10 clients. */
const killed = 3;
const restartAfter = Math.min(10, rounds - 1);

const dir = mkdtempSync(join(tmpdir(), "fedtensor-serve-demo-"));
const tokens = Array.from({ length: clients }, () => randomBytes(16).toString("hex"));
writeFileSync(join(dir, "tokens.txt"), tokens.join("\n") + "\n");
const settings = ["--clients", String(clients), "--clients-per-round", "10", "--rounds", String(rounds), "--eval-every", "5", "--checkpoint-every", "1", "--seed", "0"];

// Each node client's examples in its own file: the run's partition, as --dataset would build it.
const data = federatedData({ dataset: "mnist", partition: "iid", clients, seed: 0, clientHoldout: 0 } as never);
mkdirSync(join(dir, "data"));
for (let i = 0; i < nodeClients; i++) {
  const indices = data.clientIndices[i]!;
  const x = new Float32Array(indices.length * 784);
  indices.forEach((e, k) => x.set(data.train.x.subarray(e * 784, (e + 1) * 784) as Float32Array, k * 784));
  const y = Int32Array.from(indices, (e) => data.train.y[e]!);
  writeFileSync(join(dir, "data", `${i}.rec`), encodeRecord(new Map([["x", { dtype: "float32", shape: [indices.length, 784], data: x }], ["y", { dtype: "int32", shape: [indices.length], data: y }]] as const)));
}

let serverLog = "";
const log = (line: string) => console.log(`[demo ${new Date().toISOString().slice(11, 19)}] ${line}`);
function startServer(extra: string[]): ChildProcess {
  const child = spawn(process.execPath, [cli, "serve", "fedavg-mnist", "--aggregator", aggregator, "--min-clients", "8", "--client-tokens", join(dir, "tokens.txt"), "--port", String(port), "--join-wait", "3", "--round-timeout", "120", "--out", join(dir, "run"), ...settings, ...keyRounds, ...extra], { stdio: ["ignore", "pipe", "inherit"] });
  child.stdout!.on("data", (chunk: Buffer) => {
    serverLog += chunk.toString();
    process.stdout.write(chunk);
  });
  return child;
}
const waitFor = async (pattern: RegExp): Promise<RegExpMatchArray> => {
  for (;;) {
    const match = serverLog.match(pattern);
    if (match !== null) return match;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
};
const port = 20000 + (process.pid % 20000);
const url = `ws://127.0.0.1:${port}/fedtensor`;
// Each node client connects through its own relay (bench/step-trap.ts), armed for round 5's
// unmask request: the first 30% of the cohort's relays to see it kill their client, which has
// sent its masked input; the others let it through.
const clientUrls: string[] = [];
const traps: StepTrap[] = [];
const victims: string[] = [];
const startClient = (i: number) => spawn(process.execPath, [cli, "client", "--server", clientUrls[i]!, "--token", tokens[i]!, "--data", join(dir, "data", `${i}.rec`), "--identity-key", join(dir, "data", `${i}.identity`), "--max-backoff", "2", "--exit-when-done", ...clientThreads], { stdio: ["ignore", openSync(join(dir, "logs", `${i}.log`), "a"), "ignore"] });
mkdirSync(join(dir, "logs"));
const clientId = (i: number) => `client-${String(i + 1).padStart(3, "0")}`;

const started = performance.now();
let server = startServer(["--overwrite"]);
await waitFor(/serving/);
const processes = new Map<string, ChildProcess>();
for (let i = 0; i < nodeClients; i++) {
  const trap = await stepTrap(url, killRound, "unmask", () => (victims.length < killed ? (victims.push(clientId(i)), processes.get(clientId(i))) : undefined));
  traps.push(trap);
  clientUrls.push(trap.url);
  processes.set(clientId(i), startClient(i));
}
// Each node client process's CPU time (user + system), read from /proc while it runs: what a
// round it trains in costs it, all of it (training, protocol, messages, garbage collection).
const clientCpu = new Map<number, number>();
const readCpu = () => {
  for (const child of processes.values()) {
    const stat = existsSync(`/proc/${child.pid}/stat`) ? readFileSync(`/proc/${child.pid}/stat`, "utf8") : "";
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    if (fields.length > 13) clientCpu.set(child.pid!, (Number(fields[11]) + Number(fields[12])) / 100); // clock ticks of 1/100 s (Linux's USER_HZ)
  }
};
const cpuSampler = setInterval(readCpu, 250);
let closeBrowser = async () => {};
if (browsers > 0) {
  const { chromium } = await import("playwright-core");
  const context = await chromium.launchPersistentContext(mkdtempSync(join(tmpdir(), "fedtensor-demo-chromium-")), {
    executablePath: "/usr/bin/chromium",
    headless: true,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
  for (let t = 0; t < browsers; t++) await (await context.newPage()).goto(`http://127.0.0.1:${port}/client?token=${tokens[nodeClients + t]}&demo-client=${nodeClients + t}&auto=1`);
  closeBrowser = () => context.close();
}

const recovered = await waitFor(new RegExp(`round ${killRound}/${rounds}: [^\\n]+`));
log(`round ${killRound}: the relays killed ${victims.join(", ")} with SIGKILL after their masked input`);
log(`round ${killRound} ended: ${recovered[0]}`);
for (const id of victims) processes.set(id, startClient(Number(id.slice(-3)) - 1));

await waitFor(new RegExp(`round ${restartAfter}/${rounds}: `));
await new Promise((resolve) => setTimeout(resolve, 1500));
server.kill("SIGKILL");
log(`server killed with SIGKILL after round ${restartAfter}; starting it again with --resume`);
await new Promise((resolve) => server.once("exit", resolve));
server = startServer(["--resume"]);
const exit = await new Promise<number | null>((resolve) => server.once("exit", resolve));
clearInterval(cpuSampler);
const servedSeconds = (performance.now() - started) / 1000;
await closeBrowser();
for (const p of processes.values()) p.kill();
traps.forEach((t) => t.close());

const rows = readMetrics(join(dir, "run", "metrics.jsonl"));
const served = rows.at(-1)!.test_accuracy as number;
log(`simulating the same settings in one process (fedtensor run --aggregator ${aggregator})`);
const simStart = performance.now();
const sim = spawnSync(process.execPath, [cli, "run", "fedavg-mnist", "--aggregator", aggregator, "--out", join(dir, "sim"), ...settings], { encoding: "utf8" });
const simulated = Number(/final test accuracy: ([\d.]+)%/.exec(sim.stdout)?.[1]) / 100;
const perRound = rows.map((r) => Number(r.bytes_from_clients) / Math.max(1, Number(r.clients)));
// A round's time, served and simulated, over the rounds the demo does nothing unusual in: not
// the first (clients still joining, sessions compiling), the kill round, the round after the
// restart (clients reconnecting, the server compiling again), nor an evaluation round.
const simRows = readMetrics(join(dir, "sim", "metrics.jsonl"));
const ordinary = (round: number) => round > 1 && round !== killRound && round !== restartAfter + 1 && round % 5 !== 0;
const roundSeconds = (metrics: typeof rows) => median(metrics.filter((r) => ordinary(Number(r.round))).map((r) => Number(r.seconds)));
const [servedRound, simulatedRound] = [roundSeconds(rows), roundSeconds(simRows)];
// Where a served round's time goes: the slowest cohort member's local training (the node
// clients log it; the tabs do not), the rest is the protocol's steps and waiting for them. The
// secure sum's key setup runs while the cohort trains: what is left after the last node client
// trained (from its log line to the server's "secure sum of" line) is the protocol's part of the
// round that training does not hide, and the rounds whose masked-input step was asked for before
// that last client finished are those where the whole key setup was hidden.
const stamp = (line: string) => Date.parse(line.slice(0, 24));
const trainedIn = new Map<number, number>();
const lastTrained = new Map<number, number>();
/** Rounds each client trained in, by its log file's name. */
const roundsTrained = new Map<string, number>();
for (const file of readdirSync(join(dir, "logs"))) {
  for (const line of readFileSync(join(dir, "logs", file), "utf8").split("\n")) {
    const [, round, seconds] = /^\S+ round (\d+): trained locally in ([\d.]+) s/.exec(line) ?? [];
    if (round === undefined) continue;
    roundsTrained.set(file, (roundsTrained.get(file) ?? 0) + 1);
    trainedIn.set(Number(round), Math.max(trainedIn.get(Number(round)) ?? 0, Number(seconds)));
    lastTrained.set(Number(round), Math.max(lastTrained.get(Number(round)) ?? 0, stamp(line)));
  }
}
const training = median([...trainedIn].filter(([round]) => ordinary(round)).map(([, seconds]) => seconds));
// A client's CPU time against the rounds it trained in, over the clients that ran as one process
// throughout (not the killed ones): the slope is what a round costs a client, the intercept
// what it costs to start and to wait.
const steady = [...processes].filter(([id]) => !victims.includes(id) && clientCpu.has(processes.get(id)!.pid!));
const points = steady.map(([id, child]) => [roundsTrained.get(`${Number(id.slice(-3)) - 1}.log`) ?? 0, clientCpu.get(child.pid!)!] as const);
const mean = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
const [meanRounds, meanCpu] = [mean(points.map(([n]) => n)), mean(points.map(([, cpu]) => cpu))];
const cpuPerRound = points.reduce((a, [n, cpu]) => a + (n - meanRounds) * (cpu - meanCpu), 0) / points.reduce((a, [n]) => a + (n - meanRounds) ** 2, 0);
const serveLog = readFileSync(join(dir, "run", "serve.log"), "utf8");
const serverStamps = (pattern: RegExp) => new Map(serveLog.split("\n").flatMap((line) => { const round = pattern.exec(line)?.[1]; return round === undefined ? [] : [[Number(round), stamp(line)] as const]; }));
const summed = serverStamps(/^\S+ round (\d+): secure sum of/);
const maskedAsked = serverStamps(/^\S+ round (\d+): secagg masked-input to/);
const tailRounds = [...lastTrained].filter(([round]) => ordinary(round) && summed.has(round));
const tail = median(tailRounds.map(([round, trained]) => (summed.get(round)! - trained) / 1000));
const hidden = tailRounds.filter(([round, trained]) => (maskedAsked.get(round) ?? Infinity) < trained).length;
// Each SecAgg+ step's time, from the server sending its requests to sending the next step's
// (advertise-keys from the setup, which goes out with the tasks, so it includes waiting for
// clients busy training), median over the ordinary rounds.
const stepStarts = [
  ["advertise-keys", serverStamps(/^\S+ round (\d+) secagg advertise-keys: round starts/)],
  ...(["share-keys", "masked-input", "consistency-check", "unmask"] as const).map((step) => [step, serverStamps(new RegExp(`^\\S+ round (\\d+): secagg ${step} to`))] as const),
  ["done", summed],
] as const;
const stepSeconds = summed.size === 0 ? {} : Object.fromEntries(
  stepStarts.slice(0, -1).map(([step, starts], i) => {
    const ends = stepStarts[i + 1]![1];
    return [step, Number(median([...starts].filter(([round]) => ordinary(round) && ends.has(round)).map(([round, start]) => (ends.get(round)! - start) / 1000)).toFixed(2))];
  }),
);
console.log(
  JSON.stringify(
    {
      rounds: rows.length,
      serverExit: exit,
      servedAccuracy: served,
      simulatedAccuracy: simulated,
      differencePoints: Number(((served - simulated) * 100).toFixed(2)),
      killedAtRound: killRound,
      killed: victims,
      clientsMergedAtKillRound: rows.find((r) => r.round === killRound)?.clients,
      droppedAtKillRound: Number(serverLog.match(new RegExp(`round ${killRound} secagg done: sum of \\d+ clients \\((\\d+) dropped`))?.[1]),
      resumedFrom: /resumed from round (\d+)/.exec(serverLog)?.[1],
      bytesFromClientsPerClientPerRound: Math.round(perRound.reduce((a, b) => a + b, 0) / perRound.length),
      servedRoundSeconds: Number(servedRound.toFixed(2)),
      simulatedRoundSeconds: Number(simulatedRound.toFixed(2)),
      servedOverSimulatedRound: `${(servedRound / simulatedRound).toFixed(2)} (median of the ordinary rounds; target <= 1.3)`,
      clientThreads: clientThreadsOption,
      servedRoundSlowestTrainingSeconds: Number(training.toFixed(2)),
      clientCpuSecondsPerRoundTrained: Number.isFinite(cpuPerRound)
        ? `${cpuPerRound.toFixed(3)} (least squares over ${points.length} client processes: CPU time against rounds trained in; ${(meanCpu - cpuPerRound * meanRounds).toFixed(2)} s besides)`
        : "not measured (it reads /proc, which this system lacks, or too few clients trained)",
      ...(summed.size === 0
        ? {}
        : {
            secureSumStepSeconds: stepSeconds,
            secureSumAfterLastTrainedSeconds: `${tail.toFixed(2)} (median of the ordinary rounds; the key setup was done before the last client trained in ${hidden} of ${tailRounds.length})`,
          }),
      servedSeconds: Number(servedSeconds.toFixed(1)),
      simulatedSeconds: Number(((performance.now() - simStart) / 1000).toFixed(1)),
      folder: dir,
    },
    null,
    2,
  ),
);
