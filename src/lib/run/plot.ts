/**
 * The plot of a run: one panel per metric (accuracy and loss by default) against the round,
 * one line per run when several are compared. The chart is a Vega-Lite spec compiled and
 * rendered to SVG by vega in Node (no canvas needed), and rasterised to PNG by resvg, whose
 * binary ships inside its npm package. Text in the PNG uses the system's fonts (DejaVu Sans
 * where present); on a machine with none, the PNG has lines and no labels, the SVG is intact.
 */
import { join } from "node:path";
import { parse, View } from "vega";
import { compile, type TopLevelSpec } from "vega-lite";
import { writeFileAtomic } from "./atomic-file.js";
import type { MetricsRow } from "./metrics.js";

export interface PlotSeries {
  /** The run's name in the legend, such as its algorithm. */
  readonly name: string;
  readonly rows: readonly MetricsRow[];
}

export interface PlotMetric {
  /** The metrics column. */
  readonly key: string;
  /** The panel title and y-axis label. */
  readonly title: string;
  /** A d3 number format for the y axis, such as ".0%" for fractions. */
  readonly format?: string;
  /**
   * Several columns drawn in this one panel, one line each, named by their titles in the
   * legend (a distribution's mean and percentiles); `key` alone otherwise.
   */
  readonly series?: readonly { readonly key: string; readonly title: string }[];
}

export interface PlotOptions {
  readonly title: string;
  /** Lines under the title: the run's settings (plot-caption.ts). */
  readonly caption?: readonly string[];
  readonly metrics?: readonly PlotMetric[];
  /** The column along the x axis: the round unless said (accuracy against a DP run's epsilon, say). */
  readonly x?: { readonly key: string; readonly title: string };
}

export const defaultPlotMetrics: readonly PlotMetric[] = [
  { key: "accuracy", title: "Accuracy", format: ".0%" },
  { key: "loss", title: "Loss" },
];

export const plotFiles = { svg: "plot.svg", png: "plot.png" } as const;

const fontFamily = "DejaVu Sans";
const roundAxis = { key: "round", title: "Round" };
/** Beyond this many rounds, point markers crowd the lines and are left out. */
const maxRoundsWithPoints = 50;
/** Point markers' size (vega: the area of the square around each, in px²): large enough that a panel's one point (a short run's evaluation) is seen. */
const pointSize = 50;

/**
 * The Vega-Lite spec. A round whose metric is null or absent (not evaluated) is skipped; its
 * line joins the rounds around it. A panel with no value at all (a DP run's training loss,
 * which is private) is left out rather than drawn as an empty frame.
 */
export function plotSpec(series: readonly PlotSeries[], { title, caption = [], metrics = defaultPlotMetrics, x = roundAxis }: PlotOptions): TopLevelSpec {
  // A panel's lines: its series, or its one column; a value's `line` is what the legend shows.
  const panelLines = (metric: PlotMetric) => metric.series ?? [{ key: metric.key, title: "" }];
  const values = series.flatMap(({ name, rows }) =>
    rows.flatMap((row) =>
      metrics.flatMap((metric) =>
        panelLines(metric).flatMap(({ key, title: line }) => {
          const [value, at] = [row[key], row[x.key]];
          const run = line === "" ? name : series.length === 1 ? line : `${name} ${line}`;
          return typeof value === "number" && typeof at === "number" ? [{ run, [x.key]: at, metric: metric.key, value }] : [];
        }),
      ),
    ),
  );
  const rounds = Math.max(0, ...series.map(({ rows }) => rows.length));
  // With no value anywhere (a run stopped before any), the empty frames say what would be there.
  const withValues = metrics.filter(({ key }) => values.some((v) => v.metric === key));
  const plotted = withValues.length === 0 ? metrics : withValues;
  return {
    $schema: "https://vega.github.io/schema/vega-lite/v6.json",
    title: { text: title, fontSize: 16, ...(caption.length === 0 ? {} : { subtitle: [...caption], subtitleFontSize: 12, subtitleColor: "#444", subtitlePadding: 6, offset: 12 }) },
    data: { values },
    config: { font: fontFamily, background: "white" },
    // One round axis for all panels, so a round lines up across them.
    resolve: { scale: { x: "shared" } },
    vconcat: plotted.map(({ key, title: metricTitle, format }) => ({
      title: metricTitle,
      width: 560,
      height: 200,
      transform: [{ filter: { field: "metric", equal: key } }],
      mark: { type: "line", point: rounds <= maxRoundsWithPoints ? { filled: true, size: pointSize } : false },
      encoding: {
        x: { field: x.key, type: "quantitative", title: x.title, ...(x === roundAxis ? { axis: { tickMinStep: 1 } } : {}) },
        y: {
          field: "value",
          type: "quantitative",
          title: metricTitle,
          scale: { zero: false },
          ...(format === undefined ? {} : { axis: { format } }),
        },
        color: { field: "run", type: "nominal", title: "Run" },
      },
    })),
  };
}

export async function renderPlotSvg(series: readonly PlotSeries[], options: PlotOptions): Promise<string> {
  const view = new View(parse(compile(plotSpec(series, options)).spec), { renderer: "none" });
  try {
    return await view.toSVG();
  } finally {
    view.finalize();
  }
}

/** Rasterises an SVG at twice its size, so the PNG stays sharp on high-density screens. */
export async function svgToPng(svg: string): Promise<Buffer> {
  // Loaded on first use so that a platform without a resvg binary loses only the PNG.
  const { Resvg } = await import("@resvg/resvg-js");
  const renderer = new Resvg(svg, {
    font: { loadSystemFonts: true, defaultFontFamily: fontFamily },
    fitTo: { mode: "zoom", value: 2 },
  });
  return renderer.render().asPng();
}

/** Writes plot.svg, then plot.png, into `dir`, each whole or not at all (atomic-file.ts); returns their paths. */
export async function writePlots(
  dir: string,
  series: readonly PlotSeries[],
  options: PlotOptions,
): Promise<{ svg: string; png: string }> {
  const svg = await renderPlotSvg(series, options);
  const paths = { svg: join(dir, plotFiles.svg), png: join(dir, plotFiles.png) };
  await writeFileAtomic(paths.svg, svg);
  await writeFileAtomic(paths.png, await svgToPng(svg));
  return paths;
}
