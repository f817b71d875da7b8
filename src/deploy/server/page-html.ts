/**
 * The browser client's page (/client): the run's name and state, status, the execution
 * provider it trains on, rounds joined, what it sends each round, the run's epsilon under
 * distributed DP, a loss chart with axes (the tab's own training loss and the round's), a file
 * picker and a demo-partition field. The script (/client.js) is the esbuild bundle of src/deploy/page;
 * onnxruntime-web loads from /ort/. Query parameters join with no clicks:
 * ?token=...&demo-client=i&auto=1.
 */
import type { RunInfo } from "../protocol/messages.js";
import { CHART_HEIGHT, CHART_WIDTH, lossChart } from "../client/loss-chart.js";

/** What a tab sends each round, by the run's aggregator (docs/deployment.md, "What a client sends"). */
const sends: Record<NonNullable<RunInfo["aggregator"]>, string> = {
  fedavg: "its update: the accumulator of the round's client part (the model-sized sums of its weighted update and loss), never an example",
  secure: "SecAgg+ messages only: two public keys, sealed shares for its neighbours, its accumulator masked (the server learns the cohort's sum only), a signature over the survivor set, and unmasking shares",
  "distributed-dp": "SecAgg+ messages only, its accumulator clipped, rotated and noised here (distributed DP) before it is masked: the server learns the cohort's noisy sum only",
};

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
#status, #state { font-weight: bold; } #chart { border: 1px solid #ccc; width: 100%; height: auto; display: block; }
#chart .tick, #chart .legend { font-size: 11px; } #chart .axis-label { font-size: 12px; }
</style>
</head>
<body>
<h1>FedTensor client</h1>
<p>Run <b id="run-name">${escape(run.name)}</b>: ${escape(run.algorithm)} on ${escape(run.model)}${run.rounds === undefined ? "" : `, ${run.rounds} rounds`}. State: <span id="state">not joined</span></p>
<p>Your examples stay in this tab. Each round it sends <span id="sends">${escape(sends[run.aggregator ?? "fedavg"])}</span>.</p>
<fieldset>
<label>Token <input id="token" type="password" size="40" autocomplete="off"></label>
<label>Data file (a FedTensor record with x and y) <input id="file" type="file"></label>
<label>or demo partition, client <input id="demo" type="number" min="0" max="${run.data.clients - 1}" size="5"> of ${run.data.clients} (${escape(run.data.dataset)})</label>
<button id="join">Join</button>
</fieldset>
<p>Status: <span id="status">not connected</span></p>
<p>Runs on: <span id="backend">not started</span></p>
<p>Rounds joined: <span id="rounds">0</span></p>
<p>Sent last round: <span id="sent">nothing yet</span></p>
${run.aggregator === "distributed-dp" ? '<p>Privacy: distributed DP, the run\'s epsilon so far <span id="epsilon">(after the first round)</span></p>\n' : ""}<svg id="chart" viewBox="0 0 ${CHART_WIDTH} ${CHART_HEIGHT}" role="img" aria-label="training loss of the rounds joined, by round">${lossChart([], [])}</svg>
<p><small>Blue: this tab's own training loss in each round it joined (computed here, never sent). Grey, dashed: the round's training loss over its cohort, as the server reports it.</small></p>
<script type="module" src="/client.js"></script>
</body>
</html>
`;
}
