/**
 * Which optional backends the differential suite runs on. FEDTENSOR_TEST_BACKENDS lists them
 * (comma-separated; `webgpu` is the one there is). Unset, webgpu runs wherever Dawn finds an
 * adapter and is skipped, with the reason printed, where it finds none; named there, a webgpu
 * that cannot start fails the run, so a CI that asked for it cannot skip it unnoticed.
 */
import { activateBackend } from "../../src/runtime/backend.js";
import { webGpuAdapter } from "../../src/runtime/webgpu.js";

export interface OptionalBackend {
  readonly available: boolean;
  /** What it runs on, or why it is skipped. */
  readonly detail: string;
}

const listed = process.env.FEDTENSOR_TEST_BACKENDS?.split(",").map((name) => name.trim()).filter(Boolean);

async function probeWebGpu(): Promise<OptionalBackend> {
  if (listed !== undefined && !listed.includes("webgpu")) {
    return { available: false, detail: `FEDTENSOR_TEST_BACKENDS=${process.env.FEDTENSOR_TEST_BACKENDS} leaves it out` };
  }
  try {
    await activateBackend("webgpu");
  } catch (error) {
    if (listed !== undefined) throw error;
    return { available: false, detail: (error as Error).message };
  }
  const adapter = webGpuAdapter()!;
  return { available: true, detail: `${adapter.device} (${adapter.description || adapter.vendor}, ${adapter.featureLevel})` };
}

/** The webgpu backend for the differential tests; the skip reason is printed once per test file. */
export const webgpu: OptionalBackend = await probeWebGpu();
console.info(webgpu.available ? `webgpu differential tests run on ${webgpu.detail}` : `webgpu differential tests skipped: ${webgpu.detail}`);
