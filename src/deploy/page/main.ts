/**
 * The browser client (/client): the client core (src/deploy/client/core.ts) over the browser's
 * WebSocket, with onnxruntime-web loaded from the server's /ort/, on WebGPU where the browser
 * gives an adapter and on wasm otherwise (backend.ts). Its examples come from a record file the
 * user picks or from a demo partition (/demo-data, for a valid token); they are read by the ONNX
 * session in this tab only. ?token=...&demo-client=i&auto=1 joins with no clicks; ?ep=wasm keeps
 * it off WebGPU (?ep=webgpu is the default). Its loss chart shows its own training loss of each
 * round (computed here, never sent) beside the round's, as the server reports it. A stateful
 * run's client state stays in this origin's IndexedDB (state-idb.ts). Bundled by
 * esbuild into dist/page/client.js at `npm run build`.
 */
import { ClientCore, FinishedError, RefusedError } from "../client/core.js";
import { lossChart } from "../client/loss-chart.js";
import { examplesFromRecord, type ClientExamples } from "../client/batches.js";
import { ftError } from "../../errors/error.js";
import { loadBackend, type BackendReport } from "./backend.js";
import { IndexedDbStateStorage } from "./state-idb.js";

const element = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
const statusLine = element<HTMLSpanElement>("status");
const roundsLine = element<HTMLSpanElement>("rounds");
const chart = element<HTMLElement>("chart");
const backendLine = element<HTMLSpanElement>("backend");
const stateLine = element<HTMLSpanElement>("state");
const sentLine = element<HTMLSpanElement>("sent");
/** Only in distributed-DP runs. */
const epsilonLine = document.getElementById("epsilon");

/** What the tab has done, for people and for tests (window.fedtensorClient). */
const progress = {
  status: "not connected",
  rounds: [] as number[],
  /** The tab's own training loss per round (local), and the round's over its cohort (from the server). */
  localLosses: [] as { round: number; loss: number }[],
  losses: [] as { round: number; loss: number }[],
  backend: undefined as BackendReport | undefined,
  refused: "",
  /** The run's state as the tab knows it. */
  state: "not joined",
  /** What the tab sent per round: bytes and the messages' types. */
  sent: [] as { round: number; bytes: number; messages: string[] }[],
  /** Distributed-DP runs: the run's epsilon after each round (null when not finite). */
  epsilons: [] as { round: number; epsilon: number | null }[],
  /** Stateful runs: the round of the client state each task started from (null: none yet, the server's initial value). */
  stateReads: [] as { round: number; from: number | null }[],
  /** The rounds after which the tab wrote its state to IndexedDB (the round merged). */
  statesKept: [] as number[],
};
(window as unknown as { fedtensorClient: typeof progress }).fedtensorClient = progress;

function setStatus(text: string): void {
  progress.status = text;
  statusLine.textContent = text;
}

function setState(text: string): void {
  progress.state = text;
  stateLine.textContent = text;
}

const size = (bytes: number) => (bytes < 1024 ? `${bytes} B` : bytes < 1024 * 1024 ? `${(bytes / 1024).toFixed(1)} KiB` : `${(bytes / 1024 / 1024).toFixed(2)} MiB`);

/** Counts a message the tab sent in `round` and shows the round's total. */
function recordSent(round: number, kind: string, bytes: number): void {
  let entry = progress.sent.at(-1);
  if (entry?.round !== round) progress.sent.push((entry = { round, bytes: 0, messages: [] }));
  entry.bytes += bytes;
  entry.messages.push(kind);
  const counts = [...new Set(entry.messages)].map((k) => `${k}${entry.messages.filter((m) => m === k).length > 1 ? ` x${entry.messages.filter((m) => m === k).length}` : ""}`);
  sentLine.textContent = `round ${round}: ${size(entry.bytes)} in ${entry.messages.length} message${entry.messages.length === 1 ? "" : "s"} (${counts.join(", ")})`;
}

function showBackend(report: BackendReport): void {
  progress.backend = report;
  const check = report.check === undefined ? "" : `; checked against wasm: relative difference ${report.check.relativeDifference.toExponential(1)}`;
  const onCpu = report.provider === "webgpu" && report.cpuOps !== undefined && report.cpuOps.length > 0 ? `; ops without a WebGPU kernel, on the CPU provider: ${report.cpuOps.join(", ")}` : "";
  backendLine.textContent = `${report.provider} (${report.why}${onCpu}${check})`;
}

/** Both losses over the rounds joined, on the chart's axes (loss-chart.ts). */
function drawChart(): void {
  chart.innerHTML = lossChart(progress.localLosses, progress.losses);
}

async function join(token: string, source: { file: File } | { demo: number }): Promise<void> {
  setStatus("loading onnxruntime-web");
  const { ort, report } = await loadBackend(params.get("ep") === "wasm" ? "wasm" : undefined, showBackend);
  showBackend(report);
  const load = async (): Promise<ClientExamples> => {
    if ("file" in source) return examplesFromRecord(new Uint8Array(await source.file.arrayBuffer()), source.file.name);
    const response = await fetch(`/demo-data?token=${encodeURIComponent(token)}&client=${source.demo}`);
    if (!response.ok) throw new Error(`demo partition: ${response.status} ${(await response.text()).trim()}`);
    return examplesFromRecord(new Uint8Array(await response.arrayBuffer()), "the demo partition");
  };
  const core = new ClientCore(ort, token, "browser", load, {
    status: (line) => {
      setStatus(line);
      if (line.startsWith("joined run")) setState("joined; waiting for a round");
    },
    trained: (round, seconds) => {
      setState(`round ${round}: trained, waiting for the round's end`);
      setStatus(`round ${round}: trained on ${progress.backend!.provider} in ${seconds.toFixed(2)} s, update sent`);
    },
    sent: recordSent,
    epsilon: (round, epsilon) => {
      progress.epsilons.push({ round, epsilon });
      if (epsilonLine !== null) epsilonLine.textContent = epsilon === null ? `not finite after round ${round}` : `${epsilon.toFixed(3)} after round ${round} (at the run's delta)`;
    },
    localLoss: (round, loss) => {
      progress.localLosses.push({ round, loss });
      drawChart();
    },
    roundEnd: (round, merged, loss) => {
      if (merged) {
        progress.rounds.push(round);
        roundsLine.textContent = String(progress.rounds.length);
      }
      if (loss !== null) {
        progress.losses.push({ round, loss });
        drawChart();
      }
      setStatus(`round ${round} ${merged ? "merged" : "not merged"}; waiting for the next`);
      setState(`round ${round} ended (${merged ? "merged" : "not merged"}); waiting for the next`);
    },
    stateRead: (round, from) => progress.stateReads.push({ round, from: from ?? null }),
    stateKept: (round, where) => {
      progress.statesKept.push(round);
      setStatus(`round ${round}: client state kept in ${where} (not sent)`);
    },
  }, undefined, new IndexedDbStateStorage());
  let backoff = 250;
  const connect = () => {
    const socket = new WebSocket(`${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/fedtensor`);
    socket.binaryType = "arraybuffer";
    let queue = Promise.resolve();
    let refused = false;
    let finished = false;
    socket.onopen = () => {
      backoff = 250;
      setState("connected");
      setStatus("connected");
      socket.send(core.hello());
    };
    socket.onmessage = (event) => {
      queue = queue.then(async () => {
        try {
          // A secure round's answer to its task comes later, when its training ends (ClientCore.handle).
          for (const reply of await core.handle(new Uint8Array(event.data as ArrayBuffer), (frame) => socket.send(frame))) socket.send(reply);
        } catch (error) {
          finished = error instanceof FinishedError;
          refused = error instanceof RefusedError;
          if (refused) progress.refused = (error as Error).message;
          if (finished) {
            setState(`finished: ${(error as Error).message}`);
            setStatus("the run is over; this tab is done");
          } else {
            if (refused) setState("refused");
            setStatus(`${refused ? "refused" : "error"}: ${(error as Error).message}`);
          }
          socket.close();
        }
      });
    };
    socket.onclose = () => {
      void queue.then(() => {
        if (refused || finished) return;
        const wait = Math.round(Math.random() * backoff);
        backoff = Math.min(30_000, backoff * 2);
        setState("disconnected; reconnecting");
        setStatus(`disconnected; reconnecting in ${(wait / 1000).toFixed(1)} s`);
        setTimeout(connect, wait);
      });
    };
  };
  connect();
}

const params = new URLSearchParams(location.search);
const tokenInput = element<HTMLInputElement>("token");
const demoInput = element<HTMLInputElement>("demo");
const fileInput = element<HTMLInputElement>("file");
tokenInput.value = params.get("token") ?? "";
demoInput.value = params.get("demo-client") ?? "";
// The token leaves the address bar once read, so it is not kept in the history or shared by a copied link.
if (params.has("token")) history.replaceState(null, "", location.pathname);

function start(): void {
  const ep = params.get("ep");
  if (ep !== null && ep !== "webgpu" && ep !== "wasm") return setStatus(ftError("FT305", { option: "?ep", why: `webgpu (the default: WebGPU where there is an adapter) or wasm, not "${ep}"` }).message);
  const file = fileInput.files?.[0];
  const demo = Number(demoInput.value);
  if (tokenInput.value === "") return setStatus("a token is needed");
  if (file === undefined && (demoInput.value === "" || !Number.isInteger(demo))) return setStatus("pick a data file or a demo client");
  element<HTMLButtonElement>("join").disabled = true;
  join(tokenInput.value, file !== undefined ? { file } : { demo }).catch((error: Error) => setStatus(`error: ${error.message}`));
}
element<HTMLButtonElement>("join").addEventListener("click", start);
if (params.get("auto") === "1") start();
