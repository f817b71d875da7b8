/**
 * The browser client (/client): the client core (src/deploy/client/core.ts) over the browser's
 * WebSocket, with onnxruntime-web loaded from the server's /ort/, on WebGPU where the browser
 * gives an adapter and on wasm otherwise (backend.ts). Its examples come from a record file the
 * user picks or from a demo partition (/demo-data, for a valid token); they are read by the ONNX
 * session in this tab only. ?token=...&demo-client=i&auto=1 joins with no clicks; ?ep=wasm keeps
 * it off WebGPU (?ep=webgpu is the default). Its loss chart shows its own training loss of each
 * round (computed here, never sent) beside the round's, as the server reports it. Bundled by
 * esbuild into dist/page/client.js at `npm run build`.
 */
import { ClientCore, RefusedError } from "../client/core.js";
import { examplesFromRecord, type ClientExamples } from "../client/batches.js";
import { ftError } from "../../errors/error.js";
import { loadBackend, type BackendReport } from "./backend.js";

const element = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
const statusLine = element<HTMLSpanElement>("status");
const roundsLine = element<HTMLSpanElement>("rounds");
const chart = element<HTMLElement>("chart");
const backendLine = element<HTMLSpanElement>("backend");

/** What the tab has done, for people and for tests (window.fedtensorClient). */
const progress = {
  status: "not connected",
  rounds: [] as number[],
  /** The tab's own training loss per round (local), and the round's over its cohort (from the server). */
  localLosses: [] as { round: number; loss: number }[],
  losses: [] as { round: number; loss: number }[],
  backend: undefined as BackendReport | undefined,
  refused: "",
};
(window as unknown as { fedtensorClient: typeof progress }).fedtensorClient = progress;

function setStatus(text: string): void {
  progress.status = text;
  statusLine.textContent = text;
}

function showBackend(report: BackendReport): void {
  progress.backend = report;
  const check = report.check === undefined ? "" : `; checked against wasm: relative difference ${report.check.relativeDifference.toExponential(1)}`;
  const onCpu = report.provider === "webgpu" && report.cpuOps !== undefined && report.cpuOps.length > 0 ? `; ops without a WebGPU kernel, on the CPU provider: ${report.cpuOps.join(", ")}` : "";
  backendLine.textContent = `${report.provider} (${report.why}${onCpu}${check})`;
}

/** Both losses over the rounds joined, as polylines on one scale; x is the round. */
function drawChart(): void {
  const all = [...progress.localLosses, ...progress.losses];
  if (all.length === 0) return;
  const high = Math.max(...all.map((p) => p.loss)) || 1;
  const first = Math.min(...all.map((p) => p.round));
  const step = 400 / Math.max(1, Math.max(...all.map((p) => p.round)) - first);
  const line = (points: readonly { round: number; loss: number }[], style: string) =>
    `<polyline fill="none" ${style} points="${points.map((p) => `${((p.round - first) * step).toFixed(1)},${(195 - (p.loss / high) * 185).toFixed(1)}`).join(" ")}"></polyline>`;
  const last = (points: readonly { loss: number }[]) => (points.length === 0 ? "-" : points.at(-1)!.loss.toFixed(3));
  chart.innerHTML = `${line(progress.losses, 'stroke="gray" stroke-width="1.5" stroke-dasharray="4 3"')}${line(progress.localLosses, 'stroke="steelblue" stroke-width="2"')}<text x="4" y="14" font-size="12">this tab ${last(progress.localLosses)}, round ${last(progress.losses)} (max ${high.toFixed(3)})</text>`;
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
    status: setStatus,
    trained: (round, seconds) => setStatus(`round ${round}: trained on ${progress.backend!.provider} in ${seconds.toFixed(2)} s, update sent`),
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
    },
  });
  let backoff = 250;
  const connect = () => {
    const socket = new WebSocket(`${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/fedtensor`);
    socket.binaryType = "arraybuffer";
    let queue = Promise.resolve();
    let refused = false;
    socket.onopen = () => {
      backoff = 250;
      setStatus("connected");
      socket.send(core.hello());
    };
    socket.onmessage = (event) => {
      queue = queue.then(async () => {
        try {
          for (const reply of await core.handle(new Uint8Array(event.data as ArrayBuffer))) socket.send(reply);
        } catch (error) {
          refused = error instanceof RefusedError;
          if (refused) progress.refused = (error as Error).message;
          setStatus(`${refused ? "refused" : "error"}: ${(error as Error).message}`);
          socket.close();
        }
      });
    };
    socket.onclose = () => {
      void queue.then(() => {
        if (refused) return;
        const wait = Math.round(Math.random() * backoff);
        backoff = Math.min(30_000, backoff * 2);
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
