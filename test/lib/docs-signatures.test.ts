/**
 * docs/algorithms.md prints each algorithm's program signature (for the 2NN where a model
 * is needed); this keeps those lines in step with the library: every signature the library's
 * programs print appears in the docs, and the docs print no other.
 */
import { readFileSync } from "node:fs";
import { expect, test } from "vitest";
import {
  aggregationStages as stages,
  aggregator,
  dilocoProgram,
  evaluationProgram,
  fedAvgMProgram,
  fedAvgProgram,
  federatedHistogramProgram,
  federatedMeanProgram,
  fedOptProgram,
  fedProxProgram,
  fedSgdProgram,
  mlp2nn,
  scaffoldProgram,
  mimeProgram,
  qfflProgram,
  aflProgram,
  classificationEvaluationProgram,
  federatedEvaluationProgram,
  personalizationProgram,
} from "../../src/lib/index.js";

const documented = readFileSync(new URL("../../docs/algorithms.md", import.meta.url), "utf8")
  .split("\n")
  .filter((line) => line.startsWith("(<"));

test("docs/algorithms.md prints the signatures the library's programs have", () => {
  const programs = {
    fedAvg: fedAvgProgram(mlp2nn),
    fedAvgM: fedAvgMProgram(mlp2nn),
    dpFedAvg: fedAvgProgram(mlp2nn, { aggregator: aggregator(stages.clip(1), stages.dp()) }),
    dpFedAvgAdaptive: fedAvgProgram(mlp2nn, { aggregator: aggregator(stages.clip("adaptive"), stages.dp()) }),
    secureFedAvg: fedAvgProgram(mlp2nn, { aggregator: aggregator(stages.secure({ bits: 30, clip: 1, maxWeight: 600, maxClients: 10 })) }),
    fedSgd: fedSgdProgram(mlp2nn),
    fedProx: fedProxProgram(mlp2nn),
    fedAdam: fedOptProgram(mlp2nn, { optimizer: "adam" }),
    scaffold: scaffoldProgram(mlp2nn),
    diloco: dilocoProgram(mlp2nn),
    federatedMean: federatedMeanProgram([3]),
    federatedHistogram: federatedHistogramProgram(10),
    evaluation: evaluationProgram(mlp2nn),
    mime: mimeProgram(mlp2nn, "mime"),
    mimeLite: mimeProgram(mlp2nn, "mimelite"),
    qffl: qfflProgram(mlp2nn),
    afl: aflProgram(mlp2nn, { clients: 100 }),
    classificationEvaluation: classificationEvaluationProgram(mlp2nn),
    federatedEvaluation: federatedEvaluationProgram(mlp2nn),
    personalization: personalizationProgram(mlp2nn),
  };
  const printed = Object.entries(programs).map(([name, p]) => [name, p.signature] as const);
  for (const [name, signature] of printed) expect(documented, name).toContain(signature);
  expect(new Set(documented)).toEqual(new Set(printed.map(([, signature]) => signature)));
});
