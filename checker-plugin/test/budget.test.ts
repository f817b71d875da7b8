/**
 * A program's declared privacy budget (checker-plugin/budget.ts): FT362 where the body's literal
 * releases spend more than it, the same in the editor (the plugin's diagnostics) and from
 * `fedtensor check`, priced as program.epsilon() prices the traced program; nothing for a
 * program within its budget or one whose noise is no literal.
 */
import { readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { main } from "../../src/cli/main.js";
import { add, atClients, atServer, dpSum, f32, foldIn, fori, i32, program, split } from "../../src/index.js";
import { dpMedian } from "../../src/lib/algorithms/quantile.js";
import { gaussianReleasesEpsilon, programEpsilon } from "../../src/lib/privacy/program-epsilon.js";
import { createServices, linkFedTensor, repoRoot, type Services } from "./language-service.js";

const projectDir = join(repoRoot, "checker-plugin/test/fixtures/budget");
const fileName = join(projectDir, "budget.ts");
const text = readFileSync(fileName, "utf8");
let services: Services;

beforeAll(() => {
  linkFedTensor(projectDir);
  services = createServices({ [fileName]: text }, projectDir);
});
afterEach(() => vi.restoreAllMocks());

/** What the releases of 10 rounds at q 0.1 spend, z 4 called `calls` times a round, as FT362 prints it. */
const spent = (calls: number): string => String(Number(gaussianReleasesEpsilon([{ noiseMultiplier: 4, calls, draws: 0 }], 0.1, 10, 1e-5).toPrecision(4)));
const headline = (calls: number): string =>
  `FT362: the program's releases spend epsilon ${spent(calls)} in 10 rounds at sampling rate 0.1, more than its budget's epsilon 1 (delta 0.00001, PLD accountant)`;
/** The line of the first `needle` after position `from`. */
const lineOf = (needle: string, from: number): number => text.slice(0, text.indexOf(needle, from)).split("\n").length;

describe("a program's declared budget", () => {
  it("is reported in the editor where its literal releases exceed it: the dpSum and dpMedian's 12 steps, the dpSum in a loop of 10", () => {
    const diagnostics = services.plugin.getSemanticDiagnostics(fileName);
    expect(diagnostics.map((d) => [d.file!.getLineAndCharacterOfPosition(d.start!).line + 1, (d.messageText as string).split("\n")[0]])).toEqual([
      [lineOf("{ budget", text.indexOf("withMedian")), headline(13)],
      [lineOf("{ budget", text.indexOf("looped")), headline(11)],
    ]);
    expect(diagnostics[0]!.messageText).toContain("Why this is a privacy error: program(inputs, body, { budget }) declares what a run");
    // The span is the budget property, where the fix starts.
    expect(text.slice(diagnostics[0]!.start!, diagnostics[0]!.start! + diagnostics[0]!.length!)).toBe("budget: { epsilon: 1, delta: 1e-5, rounds: 10, samplingRate: 0.1 }");
    // The plain service knows nothing of budgets.
    expect(services.plain.getSemanticDiagnostics(fileName)).toEqual([]);
    // The source's price is the traced program's (its sampler's share aside, below the digits printed).
    const traced = program(
      { value: atClients(f32([]), { private: true }), key: atServer(i32([2])) },
      ({ value, key }) => {
        const [first, second] = split(key);
        return { sum: dpSum(value, { clip: 1, noiseMultiplier: 4, key: first }), median: dpMedian(value, { lower: 0, upper: 1, noiseMultiplier: 4, key: second }) };
      },
      { budget: { epsilon: 1, delta: 1e-5, rounds: 10, samplingRate: 0.1 } },
    );
    const priced = programEpsilon(traced);
    expect(String(Number(priced.epsilon.toPrecision(4)))).toBe(spent(13));
    expect(priced.withinBudget).toBe(false);
  });

  it("is reported by fedtensor check, explained under a code frame, with exit status 1", async () => {
    const stdout: string[] = [];
    vi.spyOn(console, "log").mockImplementation((...parts: unknown[]) => void stdout.push(parts.join(" ")));
    const status = await main(["check", "-p", relative(process.cwd(), projectDir)]);
    const printed = stdout.join("\n");
    expect(status).toBe(1);
    const file = relative(process.cwd(), fileName);
    expect(printed).toContain(`${file}:${lineOf("{ budget", text.indexOf("withMedian"))}:5 - error ${headline(13)}`);
    expect(printed).toContain(`${file}:${lineOf("{ budget", text.indexOf("looped"))}:5 - error ${headline(11)}`);
    expect(printed).toContain("  How to fix it: Raise the noise multiplier of the releases");
    expect(printed).toMatch(/\nFound 2 errors \(2 FedTensor, 0 TypeScript\) in 1 file\.$/);
    // The traced loop agrees: 11 releases of z 4 a round.
    const looped = program({ value: atClients(f32([]), { private: true }), key: atServer(i32([2])) }, ({ value, key }) => {
      const [first, rest] = split(key);
      return fori(10, dpSum(value, { clip: 1, noiseMultiplier: 4, key: first }), (i, total) => add(total, dpSum(value, { clip: 1, noiseMultiplier: 4, key: foldIn(rest, i) })));
    });
    expect((await looped.epsilon({ samplingRate: 0.01, rounds: 100 })).noiseMultiplier).toBeCloseTo(4 / Math.sqrt(11), 12);
  });
});
