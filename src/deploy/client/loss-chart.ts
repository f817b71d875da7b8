/**
 * The browser tab's loss chart as SVG markup: the tab's own training loss per round (blue) and
 * the round's over its cohort (grey, dashed), on axes with ticks, labels and units, and a
 * legend. Kept beside the client core, outside the page's bundle folder, because the server
 * renders the empty chart into the page and the tab redraws it as rounds end.
 * Drawn in a fixed coordinate system whose aspect the page keeps (no preserveAspectRatio="none"),
 * so that text is never stretched.
 */

export interface LossPoint {
  readonly round: number;
  readonly loss: number;
}

/** The chart's viewBox. */
export const CHART_WIDTH = 480;
export const CHART_HEIGHT = 260;
const plot = { left: 58, right: CHART_WIDTH - 14, top: 30, bottom: CHART_HEIGHT - 44 };

const escape = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
const text = (x: number, y: number, body: string, attributes = "") => `<text x="${x.toFixed(1)}" y="${y.toFixed(1)}" font-size="12" ${attributes}>${escape(body)}</text>`;

/** Round ticks: every round when few, else about eight evenly spaced whole rounds. */
function roundTicks(first: number, last: number): number[] {
  const step = Math.max(1, Math.ceil((last - first + 1) / 8));
  const ticks: number[] = [];
  for (let round = first; round <= last; round += step) ticks.push(round);
  return ticks;
}

/** The SVG's inner markup for the two loss series; an empty chart's axes say that no round has ended yet. */
export function lossChart(local: readonly LossPoint[], cohort: readonly LossPoint[]): string {
  const all = [...local, ...cohort];
  const first = all.length === 0 ? 1 : Math.min(...all.map((p) => p.round));
  const last = all.length === 0 ? 1 : Math.max(...all.map((p) => p.round));
  // From 0 (or below: a noisy distributed-DP round can report a negative loss) to a little above the largest.
  const low = Math.min(0, ...all.map((p) => p.loss)) * 1.1;
  const high = Math.max(0, ...all.map((p) => p.loss)) * 1.1 || 1;
  const x = (round: number) => (last === first ? (plot.left + plot.right) / 2 : plot.left + ((round - first) / (last - first)) * (plot.right - plot.left));
  const y = (loss: number) => plot.bottom - ((loss - low) / (high - low)) * (plot.bottom - plot.top);
  const parts: string[] = [];
  // Axes, with their ticks and labels.
  parts.push(`<line x1="${plot.left}" y1="${plot.bottom}" x2="${plot.right}" y2="${plot.bottom}" stroke="black"></line>`);
  parts.push(`<line x1="${plot.left}" y1="${plot.top}" x2="${plot.left}" y2="${plot.bottom}" stroke="black"></line>`);
  for (const round of roundTicks(first, last)) {
    parts.push(`<line x1="${x(round).toFixed(1)}" y1="${plot.bottom}" x2="${x(round).toFixed(1)}" y2="${plot.bottom + 4}" stroke="black"></line>`);
    parts.push(text(x(round), plot.bottom + 16, String(round), 'text-anchor="middle" class="tick"'));
  }
  for (const fraction of [0, 0.25, 0.5, 0.75, 1]) {
    const value = low + (high - low) * fraction;
    parts.push(`<line x1="${plot.left - 4}" y1="${y(value).toFixed(1)}" x2="${plot.left}" y2="${y(value).toFixed(1)}" stroke="black"></line>`);
    if (fraction > 0) parts.push(`<line x1="${plot.left}" y1="${y(value).toFixed(1)}" x2="${plot.right}" y2="${y(value).toFixed(1)}" stroke="#eee"></line>`);
    parts.push(text(plot.left - 7, y(value) + 4, value.toFixed(Math.abs(value) >= 10 ? 1 : 2), 'text-anchor="end" class="tick"'));
  }
  parts.push(text((plot.left + plot.right) / 2, CHART_HEIGHT - 8, "round", 'text-anchor="middle" class="axis-label"'));
  parts.push(text(14, (plot.top + plot.bottom) / 2, "training loss (cross-entropy, nats)", `text-anchor="middle" transform="rotate(-90 14 ${((plot.top + plot.bottom) / 2).toFixed(1)})" class="axis-label"`));
  // The series: lines, and a dot at each round (a single round is a dot only).
  const series = (points: readonly LossPoint[], stroke: string, dash: string) => {
    if (points.length === 0) return;
    const sorted = [...points].sort((a, b) => a.round - b.round);
    parts.push(`<polyline fill="none" stroke="${stroke}" stroke-width="2" ${dash} points="${sorted.map((p) => `${x(p.round).toFixed(1)},${y(p.loss).toFixed(1)}`).join(" ")}"></polyline>`);
    for (const p of sorted) parts.push(`<circle cx="${x(p.round).toFixed(1)}" cy="${y(p.loss).toFixed(1)}" r="3" fill="${stroke}"></circle>`);
  };
  series(cohort, "gray", 'stroke-dasharray="5 3"');
  series(local, "steelblue", "");
  // Legend, with the last values.
  const lastLoss = (points: readonly LossPoint[]) => (points.length === 0 ? "-" : [...points].sort((a, b) => a.round - b.round).at(-1)!.loss.toFixed(3));
  parts.push(`<line x1="${plot.left + 6}" y1="14" x2="${plot.left + 26}" y2="14" stroke="steelblue" stroke-width="2"></line>`);
  parts.push(text(plot.left + 30, 18, `this tab: ${lastLoss(local)}`, 'class="legend"'));
  parts.push(`<line x1="${plot.left + 176}" y1="14" x2="${plot.left + 196}" y2="14" stroke="gray" stroke-width="2" stroke-dasharray="5 3"></line>`);
  parts.push(text(plot.left + 200, 18, `round's cohort: ${lastLoss(cohort)}`, 'class="legend"'));
  if (all.length === 0) parts.push(text((plot.left + plot.right) / 2, (plot.top + plot.bottom) / 2, "no round has ended yet", 'text-anchor="middle" fill="gray"'));
  return parts.join("");
}
