/**
 * A real redis-server for bench/fedavg-engine.ts and the engine tests, on a free port of
 * 127.0.0.1, without persistence (`--save "" --appendonly no`), so a restart loses every job
 * as a crashed Redis would.
 * `redisBinary` is undefined when redis-server is not installed: the tests then skip, saying so.
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { createServer } from "node:net";

export const redisBinary: string | undefined = (() => {
  const found = spawnSync("sh", ["-c", "command -v redis-server"], { encoding: "utf8" });
  return found.status === 0 ? found.stdout.trim() : undefined;
})();

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

export interface RedisServer {
  readonly url: string;
  readonly port: number;
  /** Kills the server (SIGKILL: no goodbye to its clients) and starts a fresh, empty one on the same port. */
  restart(downMs: number): Promise<void>;
  kill(): void;
  stop(): void;
}

function launch(port: number, password: string | undefined): Promise<ChildProcess> {
  const auth = password === undefined ? [] : ["--requirepass", password];
  const child = spawn(redisBinary!, ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", ...auth], { stdio: ["ignore", "pipe", "pipe"] });
  return new Promise((resolve, reject) => {
    let output = "";
    const timer = setTimeout(() => reject(new Error(`redis-server did not start on ${port}: ${output}`)), 10_000);
    child.stdout!.on("data", (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes("Ready to accept connections")) {
        clearTimeout(timer);
        resolve(child);
      }
    });
    child.once("exit", (code) => reject(new Error(`redis-server exited with ${code}: ${output}`)));
  });
}

/** A server on a free port; with `password`, one that requires it (its url then carries it, as redis://:password@host:port). */
export async function startRedis(password?: string): Promise<RedisServer> {
  const port = await freePort();
  let child = await launch(port, password);
  return {
    url: `redis://${password === undefined ? "" : `:${password}@`}127.0.0.1:${port}`,
    port,
    async restart(downMs) {
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGKILL");
      await exited;
      await new Promise((resolve) => setTimeout(resolve, downMs));
      child = await launch(port, password);
    },
    kill: () => child.kill("SIGKILL"),
    stop: () => child.kill("SIGTERM"),
  };
}
