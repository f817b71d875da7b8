/**
 * Headless Debian chromium for the browser-client tests, driven by playwright-core with the
 * system executable (no browser download), and the client tabs they open.
 */
import { existsSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium, type BrowserContext, type Page } from "playwright-core";

export const executablePath = "/usr/bin/chromium";
export const hasChromium = existsSync(executablePath);

/**
 * Flags that give headless chromium on Linux a WebGPU adapter with no GPU: WebGPU on Vulkan,
 * and Vulkan on SwiftShader (/usr/lib/chromium/libvk_swiftshader.so), a software adapter.
 * Without them (--disable-gpu) the browser gives no adapter.
 */
const webGpuFlags = ["--enable-unsafe-webgpu", "--enable-features=Vulkan", "--use-vulkan=swiftshader", "--use-webgpu-adapter=swiftshader", "--disable-vulkan-surface"];

export function launchChromium(options: { webgpu: boolean }): Promise<BrowserContext> {
  return chromium.launchPersistentContext(mkdtempSync(join(tmpdir(), "fedtensor-chromium-")), {
    executablePath,
    headless: true,
    args: ["--headless", "--no-sandbox", ...(options.webgpu ? webGpuFlags : ["--disable-gpu"]), "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
}

/** What a client tab has done (the page's window.fedtensorClient). */
export interface TabProgress {
  readonly status: string;
  readonly rounds: number[];
  readonly localLosses: { round: number; loss: number }[];
  readonly losses: { round: number; loss: number }[];
  /** src/deploy/page/backend.ts BackendReport. */
  readonly backend?: { provider: "webgpu" | "wasm"; why: string; cpuOps?: string[]; check?: { relativeDifference: number; tolerance: number } };
  readonly refused: string;
  readonly state: string;
  readonly sent: { round: number; bytes: number; messages: string[] }[];
  readonly epsilons: { round: number; epsilon: number | null }[];
  /** Stateful runs: the round of the client state each task started from (null: the server's initial value). */
  readonly stateReads: { round: number; from: number | null }[];
}

export interface ClientTab {
  readonly page: Page;
  /** Uncaught errors of the page. */
  readonly errors: string[];
  progress(): Promise<TabProgress>;
}

/** A tab on the server's /client page, `query` its query string (token, demo-client, auto, ep). */
export async function openClientTab(browser: BrowserContext, serverUrl: string, query: string): Promise<ClientTab> {
  const page = await browser.newPage();
  const errors: string[] = [];
  page.on("pageerror", (error) => errors.push(error.message));
  await page.goto(`${serverUrl.replace(/^ws/, "http").replace(/\/fedtensor$/, "")}/client?${query}`);
  // A string, evaluated in the page (the test's tsconfig has no DOM types).
  return { page, errors, progress: async () => (await page.evaluate("window.fedtensorClient")) as TabProgress };
}

/** The page's WebGPU adapter as the page names it (vendor architecture), or null when the browser gives none. */
export async function webGpuAdapterIn(page: Page): Promise<string | null> {
  return (await page.evaluate(`(async () => {
    const adapter = await navigator.gpu?.requestAdapter();
    return adapter ? [adapter.info?.vendor, adapter.info?.architecture].filter(Boolean).join(" ") : null;
  })()`)) as string | null;
}

/** `args` with option `name`'s value replaced (a CLI option may be given once). */
export const withOption = (args: readonly string[], name: string, value: string): string[] => args.map((arg, i) => (args[i - 1] === name ? value : arg));
