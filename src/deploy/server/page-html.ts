/**
 * The browser client's page (/client): status, the execution provider it trains on, rounds
 * joined, a loss chart (the tab's own training loss and the round's), a file picker and a
 * demo-partition field. The script (/client.js) is the esbuild bundle of src/deploy/page;
 * onnxruntime-web loads from /ort/. Query parameters join with no clicks:
 * ?token=...&demo-client=i&auto=1.
 */
import type { RunInfo } from "../protocol/messages.js";

const escape = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

export function pageHtml(run: RunInfo): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>FedTensor client: ${escape(run.name)}</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body { font: 15px system-ui, sans-serif; max-width: 44rem; margin: 2rem auto; padding: 0 1rem; }
fieldset { margin: 1rem 0; } label { display: block; margin: .3rem 0; }
#status { font-weight: bold; } #chart { border: 1px solid #ccc; width: 100%; height: 200px; }
</style>
</head>
<body>
<h1>FedTensor client</h1>
<p>Run <b>${escape(run.name)}</b>: ${escape(run.algorithm)} on ${escape(run.model)}. Your examples stay in this tab; only the model update it computes is sent.</p>
<fieldset>
<label>Token <input id="token" type="password" size="40" autocomplete="off"></label>
<label>Data file (a FedTensor record with x and y) <input id="file" type="file"></label>
<label>or demo partition, client <input id="demo" type="number" min="0" max="${run.data.clients - 1}" size="5"> of ${run.data.clients} (${escape(run.data.dataset)})</label>
<button id="join">Join</button>
</fieldset>
<p>Status: <span id="status">not connected</span></p>
<p>Runs on: <span id="backend">not started</span></p>
<p>Rounds joined: <span id="rounds">0</span></p>
<svg id="chart" viewBox="0 0 400 200" preserveAspectRatio="none" aria-label="training loss of the rounds joined"></svg>
<p><small>Blue: this tab's own training loss in each round it joined (computed here, never sent). Grey, dashed: the round's training loss over its cohort, as the server reports it.</small></p>
<script type="module" src="/client.js"></script>
</body>
</html>
`;
}
