/**
 * Plugin discovery, end to end: tsserver loads tsconfig plugins from the node_modules that
 * holds the TypeScript it runs (by its real path). A project whose TypeScript is symlinked from
 * elsewhere (npm link, pnpm, a monorepo's hoisting) does not get the plugin until tsserver is
 * told where to look; `fedtensor check --doctor` says so and how, and a project with its own
 * TypeScript gets it. Both verdicts are checked against the real tsserver.
 */
import { cpSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import ts from "typescript";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { main } from "../../src/cli/main.js";
import { repoRoot } from "./language-service.js";
import { TsServer } from "./tsserver-client.js";

const source = `import { atClients, f32, program, reduceMean } from "fedtensor";\nexport const mean = program({ x: atClients(f32([10])) }, ({ x }) => reduceMean(x));\n`;
const tsconfig = { compilerOptions: { module: "NodeNext", moduleResolution: "NodeNext", strict: true, skipLibCheck: true, noEmit: true, plugins: [{ name: "fedtensor/checker-plugin" }] } };
let root: string;

/** A project with fedtensor linked in and TypeScript linked (`symlinked`) or copied into its node_modules. */
function project(name: string, typescript: "symlinked" | "copied"): string {
  const dir = join(root, name);
  mkdirSync(join(dir, "node_modules"), { recursive: true });
  symlinkSync(repoRoot, join(dir, "node_modules/fedtensor"), "junction");
  if (typescript === "symlinked") symlinkSync(join(repoRoot, "node_modules/typescript"), join(dir, "node_modules/typescript"), "junction");
  else cpSync(join(repoRoot, "node_modules/typescript"), join(dir, "node_modules/typescript"), { recursive: true });
  writeFileSync(join(dir, "tsconfig.json"), JSON.stringify(tsconfig));
  writeFileSync(join(dir, "main.ts"), source);
  return dir;
}

/** The first line of the hover over `mean` from the project's own tsserver, started with `args`. */
async function hoverFrom(dir: string, args: string[]): Promise<string> {
  const tsserver = new TsServer(["--disableAutomaticTypingAcquisition", ...args], join(dir, "node_modules/typescript/lib/tsserver.js"));
  try {
    const file = join(dir, "main.ts");
    await tsserver.request("open", { file, projectRootPath: dir });
    const body = await tsserver.request<ts.server.protocol.QuickInfoResponseBody>("quickinfo", { file, line: 2, offset: 14 });
    const documentation = typeof body.documentation === "string" ? body.documentation : body.documentation.map((p) => p.text).join("");
    return documentation.split("\n")[0]!;
  } finally {
    await tsserver.close();
  }
}

async function doctor(dir: string): Promise<{ status: number; stdout: string }> {
  const stdout: string[] = [];
  vi.spyOn(console, "log").mockImplementation((...parts: unknown[]) => void stdout.push(parts.join(" ")));
  const status = await main(["check", "--doctor", `--project=${dir}`]);
  return { status, stdout: stdout.join("\n") };
}

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), "fedtensor-discovery-"));
});
afterEach(() => vi.restoreAllMocks());
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe("plugin discovery", () => {
  it("with a symlinked TypeScript: the doctor says why and what to set, and that setting loads the plugin", async () => {
    const dir = project("linked", "symlinked");
    const { status, stdout } = await doctor(dir);
    expect(status).toBe(1);
    expect(stdout).toContain(`typescript for the project (the editor's workspace version): ${ts.version} at ${join(repoRoot, "node_modules/typescript")}`);
    expect(stdout).toContain(`tsserver looks for the plugin from ${join(repoRoot, "node_modules")}: no fedtensor/checker-plugin under`);
    expect(stdout).toContain(`tsserver itself: --pluginProbeLocations ${dir}`);
    expect(stdout).toContain(`"typescript.tsserver.pluginPaths"`);
    expect(await hoverFrom(dir, [])).not.toMatch(/^FedTensor/);
    expect(await hoverFrom(dir, ["--pluginProbeLocations", dir])).toBe("FedTensor program: `(<x={f32[10]}@CLIENTS> -> f32[10]@SERVER)`, aggregated by reduceMean");
  });

  it("with the project's own TypeScript: the doctor says it loads, and it does", async () => {
    const dir = project("own", "copied");
    const { status, stdout } = await doctor(dir);
    expect(stdout).toContain(`tsserver looks for the plugin from ${join(dir, "node_modules")}: ${join(repoRoot, "dist/cjs/checker-plugin/index.js")}`);
    expect(status).toBe(0);
    expect(await hoverFrom(dir, [])).toBe("FedTensor program: `(<x={f32[10]}@CLIENTS> -> f32[10]@SERVER)`, aggregated by reduceMean");
  });

  it("without a plugins entry: the doctor says what to add", async () => {
    const dir = project("no-entry", "symlinked");
    writeFileSync(join(dir, "tsconfig.json"), JSON.stringify({ compilerOptions: { strict: true } }));
    const { status, stdout } = await doctor(dir);
    expect(status).toBe(1);
    expect(stdout).toContain(`has no plugins entry for it: add "plugins": [{ "name": "fedtensor/checker-plugin" }] to its compilerOptions`);
  });
});
