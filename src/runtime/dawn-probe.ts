/**
 * Dawn's first look for an adapter, in a child process. Dawn writes its own warnings to the
 * process's stderr from native code (without Vulkan: "Warning: Couldn't load Vulkan: ..." and
 * an indented `at operator() (.../BackendVk.cpp:368)` line that reads like a stack trace),
 * which Node cannot catch or silence in-process. The child's stderr is captured instead, and
 * what Dawn said is folded into FT301's text when it finds no adapter.
 */
import { spawn } from "node:child_process";
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";

/** What the child found: whether Dawn gives an adapter with these options, and what Dawn printed. */
export interface DawnProbe {
  readonly found: boolean;
  /** Dawn's own lines, without its native source locations. */
  readonly said: string;
}

/** The child: loads Dawn, asks as requestAdapter in webgpu.ts does, and prints whether it found one. */
const probeScript = `
const [url, optionsJson, chosen] = process.argv.slice(1);
const dawn = await import(url);
const gpu = dawn.create(JSON.parse(optionsJson));
const core = await gpu.requestAdapter({ powerPreference: "high-performance" });
const compatibility = core === null && chosen === "1" ? await gpu.requestAdapter({ featureLevel: "compatibility" }) : null;
process.stdout.write(JSON.stringify({ found: (core ?? compatibility) !== null }));
process.exit(0);
`;

/** Dawn's lines as one line: its native `at operator() (file:line)` locations left out. */
export function dawnSaid(stderr: string): string {
  return stderr
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line.length > 0 && !/^at .*\(.*:\d+\)$/.test(line))
    .join("; ");
}

/**
 * Probes Dawn with `options` in a child process; undefined when the probe itself cannot run
 * (no answer within `timeoutMs`, a crash), and the caller then asks Dawn in-process as before.
 */
export async function probeDawn(packageName: string, options: readonly string[], chosen: boolean, timeoutMs = 30_000): Promise<DawnProbe | undefined> {
  let url: string;
  try {
    url = pathToFileURL(createRequire(import.meta.url).resolve(packageName)).href;
  } catch {
    return undefined;
  }
  const child = spawn(process.execPath, ["--input-type=module", "-e", probeScript, url, JSON.stringify(options), chosen ? "1" : "0"], { stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
  const code = await new Promise<number | null>((resolve) => child.once("close", resolve)).finally(() => clearTimeout(timer));
  if (code !== 0) return undefined;
  try {
    return { found: (JSON.parse(stdout) as { found: boolean }).found === true, said: dawnSaid(stderr) };
  } catch {
    return undefined;
  }
}
