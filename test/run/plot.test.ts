import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { MetricsRow } from "../../src/lib/run/metrics.js";
import { validateRunConfig } from "../../src/lib/run/config.js";
import { plotCaption } from "../../src/lib/run/plot-caption.js";
import { plotFiles, plotSpec, writePlots, type PlotSeries } from "../../src/lib/run/plot.js";
import { tempDir } from "./temp-dir.js";

/** A run whose loss decays and accuracy rises at `rate`, evaluated every other round. */
function run(name: string, rounds: number, rate: number): PlotSeries {
  const rows: MetricsRow[] = [];
  for (let round = 1; round <= rounds; round++) {
    const decay = Math.exp(-round * rate);
    rows.push({ round, loss: 2 * decay, accuracy: round % 2 === 0 ? 1 - 0.9 * decay : null });
  }
  return { name, rows };
}

describe("plotSpec", () => {
  it("has one panel per metric and one data point per evaluated round", () => {
    const spec = plotSpec([run("fedavg", 4, 0.5)], { title: "MNIST" }) as unknown as {
      data: { values: { run: string; round: number; metric: string; value: number }[] };
      vconcat: { title: string; mark: { point: unknown } }[];
    };
    expect(spec.vconcat.map((panel) => panel.title)).toEqual(["Accuracy", "Loss"]);
    expect(spec.vconcat[0]!.mark.point).toEqual({ filled: true, size: 50 });
    const values = spec.data.values;
    expect(values.filter((v) => v.metric === "accuracy").map((v) => v.round)).toEqual([2, 4]);
    expect(values.filter((v) => v.metric === "loss").map((v) => v.round)).toEqual([1, 2, 3, 4]);
    expect(values[0]).toEqual({ run: "fedavg", round: 1, metric: "loss", value: 2 * Math.exp(-0.5) });
  });

  it("puts another column along the x axis when asked, skipping rows without it", () => {
    const rows: MetricsRow[] = [
      { round: 1, test_accuracy: null, epsilon: 2.1 },
      { round: 2, test_accuracy: 0.8, epsilon: 2.5 },
      { round: 3, test_accuracy: 0.9, epsilon: null },
    ];
    const spec = plotSpec([{ name: "dp", rows }], { title: "t", metrics: [{ key: "test_accuracy", title: "Accuracy" }], x: { key: "epsilon", title: "Epsilon" } }) as unknown as {
      data: { values: unknown[] };
      vconcat: { encoding: { x: { field: string; title: string } } }[];
    };
    expect(spec.data.values).toEqual([{ run: "dp", epsilon: 2.5, metric: "test_accuracy", value: 0.8 }]);
    expect(spec.vconcat[0]!.encoding.x).toEqual({ field: "epsilon", type: "quantitative", title: "Epsilon" });
  });

  it("draws a panel's series as lines of their own, named by title (by run and title when runs are compared)", () => {
    const rows = [{ round: 1, client_accuracy_mean: 0.8, client_accuracy_p10: 0.6 }, { round: 2, client_accuracy_mean: null, client_accuracy_p10: null }];
    const metrics = [{ key: "client_accuracy_mean", title: "Clients", series: [{ key: "client_accuracy_mean", title: "mean" }, { key: "client_accuracy_p10", title: "p10" }] }];
    const one = plotSpec([{ name: "a", rows }], { title: "t", metrics }) as unknown as { data: { values: unknown[] } };
    expect(one.data.values).toEqual([
      { run: "mean", round: 1, metric: "client_accuracy_mean", value: 0.8 },
      { run: "p10", round: 1, metric: "client_accuracy_mean", value: 0.6 },
    ]);
    const two = plotSpec([{ name: "a", rows }, { name: "b", rows }], { title: "t", metrics }) as unknown as { data: { values: { run: string }[] } };
    expect(two.data.values.map((v) => v.run)).toEqual(["a mean", "a p10", "b mean", "b p10"]);
  });

  it("leaves out a panel with no value (a DP run's private training loss), unless every panel is empty", () => {
    const metrics = [{ key: "test_accuracy", title: "Test accuracy" }, { key: "train_loss", title: "Training loss" }];
    const rows = [{ round: 1, train_loss: null, test_accuracy: 0.5 }];
    const spec = plotSpec([{ name: "dp", rows }], { title: "t", metrics }) as unknown as { vconcat: { title: string }[] };
    expect(spec.vconcat.map((panel) => panel.title)).toEqual(["Test accuracy"]);
    const none = plotSpec([{ name: "dp", rows: [{ round: 1, train_loss: null, test_accuracy: null }] }], { title: "t", metrics }) as unknown as { vconcat: { title: string }[] };
    expect(none.vconcat.map((panel) => panel.title)).toEqual(["Test accuracy", "Training loss"]);
  });

  it("puts the caption's lines under the title", () => {
    const spec = plotSpec([run("fedavg", 4, 0.5)], { title: "MNIST", caption: ["10 of 100 clients per round", "test set evaluated every round"] }) as unknown as { title: { text: string; subtitle: string[] } };
    expect(spec.title.text).toBe("MNIST");
    expect(spec.title.subtitle).toEqual(["10 of 100 clients per round", "test set evaluated every round"]);
    const bare = plotSpec([run("fedavg", 4, 0.5)], { title: "MNIST" }) as unknown as { title: Record<string, unknown> };
    expect(bare.title.subtitle).toBeUndefined();
  });

  it("leaves out point markers on long runs", () => {
    const spec = plotSpec([run("fedavg", 51, 0.1)], { title: "long" }) as unknown as { vconcat: { mark: { point: unknown } }[] };
    expect(spec.vconcat.every((panel) => panel.mark.point === false)).toBe(true);
  });
});

describe("writePlots", () => {
  it("writes a labelled SVG and a PNG of it", async () => {
    const dir = tempDir("ft-plot-");
    const paths = await writePlots(dir, [run("fedavg", 20, 0.25), run("fedprox", 20, 0.15)], {
      title: "MNIST 2NN, 10 clients per round",
    });
    expect(paths).toEqual({ svg: join(dir, plotFiles.svg), png: join(dir, plotFiles.png) });

    const svg = readFileSync(paths.svg, "utf8");
    expect(svg.startsWith("<svg")).toBe(true);
    expect(svg.trimEnd().endsWith("</svg>")).toBe(true);
    for (const text of ["MNIST 2NN, 10 clients per round", "Accuracy", "Loss", "Round", "Run", "fedavg", "fedprox", "100%"]) {
      expect(svg).toContain(`>${text}</text>`);
    }

    const png = readFileSync(paths.png);
    expect([...png.subarray(0, 8)]).toEqual([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
    expect(png.subarray(12, 16).toString("latin1")).toBe("IHDR");
    const [width, height] = [png.readUInt32BE(16), png.readUInt32BE(20)];
    // Two 560x200 panels with axes, titles and a legend, rendered at twice the SVG's size.
    expect(width).toBeGreaterThan(1200);
    expect(width).toBeLessThan(1800);
    expect(height).toBeGreaterThan(900);
    expect(height).toBeLessThan(1400);
    expect(png.length).toBeGreaterThan(30_000);
  });
});

describe("plotCaption", () => {
  const caption = (settings: Record<string, unknown>) => plotCaption(validateRunConfig({ model: "2nn", rounds: 25, evalEvery: 5, ...settings }, "test"));

  it("says the cohort, local training, aggregator and the evaluated rounds", () => {
    expect(caption({})).toEqual([
      "10 of 100 clients per round · IID clients · 1 local epoch · batch 10 · lr 0.1",
      "weighted-mean aggregation · test set evaluated every 5 rounds and at the last",
    ]);
    expect(caption({ rounds: 3 })[1]).toBe("weighted-mean aggregation · test set evaluated at the last round only (--eval-every 5)");
    expect(caption({ evalEvery: 1, localEpochs: 2, algorithm: "fedadam", clientOptimizer: "adam", lrSchedule: "cosine", partition: "dirichlet", alpha: 0.1 })).toEqual([
      "10 of 100 clients per round · Dirichlet(0.1) clients · 2 local epochs · batch 10 · client adam",
      "lr 0.1 (cosine) · server lr 0.03",
      "weighted-mean aggregation · test set evaluated every round",
    ]);
    expect(caption({ algorithm: "fedsgd" })[0]).toBe("10 of 100 clients per round · IID clients · one full-batch gradient per client · step 0.1");
  });

  it("gives a private run's privacy settings and a robust run's attack; every line fits the panel's width", () => {
    const dp = caption({ aggregator: "dp", clients: 1000, clientsPerRound: 100, dpClip: "adaptive", dpInitialClip: 0.1, dpNoise: 1.1 });
    expect(dp[0]).toMatch(/^about 100 of 1000 clients per round \(Poisson\)/);
    expect(dp).toContain("DP-FedAvg: adaptive clip from 0.1, noise multiplier 1.1, delta 0.00001");
    expect(caption({ aggregator: "secure", secureBits: 20 })).toContain("secure aggregation (simulated): 20-bit sums, clip 1");
    // Distributed DP's settings, alone or after other stages (then the chain is named too).
    const ddp = "distributed DP (discrete Gaussian from the clients, simulated secure sum): clip 1, noise multiplier 1 at 1 clients, 16-bit sums, delta 0.00001";
    expect(caption({ aggregator: "distributed-dp" }).join(" · ")).toContain(`${ddp} · test set`);
    expect(caption({ aggregator: "zeroing,distributed-dp", algorithm: "fedprox" }).join(" · ")).toContain(`${ddp} · zeroing,distributed-dp aggregation`);
    const robust = caption({ aggregator: "krum", attack: "sign-flip", byzantine: 0.2, quantizeBits: 8, dropout: 0.1 });
    expect(robust[0]).toContain("dropout 0.1");
    expect(robust.join(" · ")).toContain("krum aggregation · sign-flip attack (scale 10) by 0.2 of each cohort · updates quantized to 8 bits");
    for (const line of [...dp, ...robust]) expect(line.length).toBeLessThanOrEqual(95);
  });
});
