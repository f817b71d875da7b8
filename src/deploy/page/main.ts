/**
 * The browser client (/client): the client core (src/deploy/client/core.ts) over the browser's
 * WebSocket, with onnxruntime-web (wasm) loaded from the server's /ort/. Its examples come from a
 * record file the user picks or from a demo partition (/demo-data, for a valid token); they are
 * read by the ONNX session in this tab only. ?token=...&demo-client=i&auto=1 joins with no clicks.
 * Bundled by esbuild into dist/page/client.js at `npm run build`.
 */
import { ClientCore, RefusedError, type OrtLike } from "../client/core.js";
import type { ClientExamples } from "../client/batches.js";
import { decodeRecord } from "../protocol/record.js";

const element = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
const statusLine = element<HTMLSpanElement>("status");
const roundsLine = element<HTMLSpanElement>("rounds");
const chart = element<HTMLElement>("chart");

/** What the tab has done, for people and for tests (window.fedtensorClient). */
const progress = { status: "not connected", rounds: [] as number[], losses: [] as { round: number; loss: number }[], refused: "" };
(window as unknown as { fedtensorClient: typeof progress }).fedtensorClient = progress;

function setStatus(text: string): void {
  progress.status = text;
  statusLine.textContent = text;
}

/** The loss of the rounds joined, as a polyline scaled to the chart. */
function drawChart(): void {
  const points = progress.losses;
  if (points.length === 0) return;
  const high = Math.max(...points.map((p) => p.loss)) || 1;
  const step = 400 / Math.max(1, points.length - 1);
  const line = points.map((p, i) => `${(i * step).toFixed(1)},${(195 - (p.loss / high) * 185).toFixed(1)}`).join(" ");
  chart.innerHTML = `<polyline fill="none" stroke="steelblue" stroke-width="2" points="${line}"></polyline><text x="4" y="14" font-size="12">loss ${points.at(-1)!.loss.toFixed(3)} (max ${high.toFixed(3)})</text>`;
}

function examplesOf(bytes: Uint8Array, what: string): ClientExamples {
  const record = decodeRecord(bytes);
  const x = record.get("x");
  const y = record.get("y");
  if (typeof x !== "object" || typeof y !== "object" || y.dtype !== "int32" || x.dtype === "bool" || x.shape[0] !== y.shape[0]) throw new Error(`${what} is not a record with x and y`);
  return { x: x.data as Float32Array | Int32Array, y: y.data as Int32Array };
}

async function loadOrt(): Promise<OrtLike> {
  // Served from onnxruntime-web's package by fedtensor serve; one thread (no cross-origin isolation needed).
  const ort = (await import(/* @vite-ignore */ "/ort/ort.wasm.min.mjs" as string)) as OrtLike & { env: { wasm: { wasmPaths: string; numThreads: number }; logLevel: string } };
  ort.env.wasm.wasmPaths = "/ort/";
  ort.env.wasm.numThreads = 1;
  ort.env.logLevel = "error";
  return ort;
}

async function join(token: string, source: { file: File } | { demo: number }): Promise<void> {
  setStatus("loading onnxruntime-web");
  const ort = await loadOrt();
  const load = async (): Promise<ClientExamples> => {
    if ("file" in source) return examplesOf(new Uint8Array(await source.file.arrayBuffer()), source.file.name);
    const response = await fetch(`/demo-data?token=${encodeURIComponent(token)}&client=${source.demo}`);
    if (!response.ok) throw new Error(`demo partition: ${response.status} ${(await response.text()).trim()}`);
    return examplesOf(new Uint8Array(await response.arrayBuffer()), "the demo partition");
  };
  const core = new ClientCore(ort, token, "browser", load, {
    status: setStatus,
    trained: (round, seconds) => setStatus(`round ${round}: trained in ${seconds.toFixed(2)} s, update sent`),
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
  const file = fileInput.files?.[0];
  const demo = Number(demoInput.value);
  if (tokenInput.value === "") return setStatus("a token is needed");
  if (file === undefined && (demoInput.value === "" || !Number.isInteger(demo))) return setStatus("pick a data file or a demo client");
  element<HTMLButtonElement>("join").disabled = true;
  join(tokenInput.value, file !== undefined ? { file } : { demo }).catch((error: Error) => setStatus(`error: ${error.message}`));
}
element<HTMLButtonElement>("join").addEventListener("click", start);
if (params.get("auto") === "1") start();
