/**
 * `fedtensor serve --tls-cert --tls-key`: wss:// and https:// with a self-signed certificate
 * made here by openssl; a client that trusts it (--ca) trains a round, and the page is served
 * over https; a client that does not trust it stops with FT353 instead of retrying. Skipped, saying why, where openssl is absent.
 */
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { get } from "node:https";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { readMetrics } from "../../src/lib/run/metrics.js";
import { tempDir } from "../run/temp-dir.js";
import { smallServe, startClient, startProcess, writeTokens, type Process } from "./serve-helpers.js";
import { partitionFiles } from "./serve-kill-helpers.js";
import { deadline } from "../helpers/deadline.js";

const hasOpenssl = spawnSync("openssl", ["version"]).status === 0;
if (!hasOpenssl) console.log("serve-tls.test.ts skipped: no openssl to make a certificate");

const started: Process[] = [];
afterAll(() => started.forEach((p) => p.child.exitCode === null && p.child.kill("SIGKILL")));

describe.skipIf(!hasOpenssl)("serve over TLS", () => {
  it("serves wss:// and https:// with --tls-cert/--tls-key; a client trusting the certificate with --ca trains, one that does not stops", async () => {
    const dir = tempDir("fedtensor-tls-");
    const [cert, key] = [join(dir, "cert.pem"), join(dir, "key.pem")];
    const made = spawnSync("openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", key, "-out", cert], { encoding: "utf8" });
    expect(made.status, made.stderr).toBe(0);
    const out = join(dir, "run");
    const { path, tokens } = writeTokens(dir, 1);
    const server = startProcess([...smallServe(path, out, "--rounds", "1", "--clients-per-round", "1", "--min-clients", "1"), "--tls-cert", cert, "--tls-key", key]);
    started.push(server);
    const url = (await server.waitFor(/at (wss:\/\/127\.0\.0\.1:\d+\/fedtensor)/))[1]!;
    const page = await new Promise<string>((resolve, reject) => {
      get(`${url.replace(/^wss/, "https").replace(/\/fedtensor$/, "")}/client`, { ca: readFileSync(cert) }, (response) => {
        let body = "";
        response.on("data", (chunk: Buffer) => (body += chunk.toString()));
        response.on("end", () => resolve(body));
      }).on("error", reject);
    });
    expect(page).toContain("FedTensor client");
    // Without --ca the certificate fails verification, as it would on every attempt: the client stops (FT353), not retries.
    const untrusting = startClient(url, tokens[0]!, 0);
    started.push(untrusting);
    expect(await untrusting.exited()).toBe(1);
    expect(untrusting.output()).toMatch(/FT353: the server's certificate at wss:\/\/127\.0\.0\.1:\d+\/fedtensor is not trusted: self.signed certificate/);
    expect(untrusting.output()).not.toMatch(/reconnecting/);
    // Its examples from a record file (those --dataset mnist --client-index 0 reads): the client process reads no MNIST.
    const [file] = partitionFiles(dir, 1);
    const client = startProcess(["client", "--server", url, "--token", tokens[0]!, "--data", file!, "--max-backoff", "1", "--ca", cert, "--exit-when-done"]);
    started.push(client);
    expect(await server.exited()).toBe(0);
    expect(await client.exited()).toBe(0);
    expect(readMetrics(join(out, "metrics.jsonl")).map((r) => r.clients)).toEqual([1]);
  }, deadline(120_000));
});
