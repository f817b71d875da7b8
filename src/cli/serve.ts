/**
 * `fedtensor serve [example | config.json] --port P --client-tokens FILE`: runs a run config's
 * rounds with real clients (`fedtensor client` processes and browser tabs at /client) over
 * WebSockets, as docs/deployment.md describes. The run's options are `fedtensor run`'s.
 */
import { rangeDomains, resolveKeyRounds } from "../deploy/secagg/params.js";
import { ftError } from "../errors/error.js";
import { takeFlags, UsageError, type Command } from "./command.js";
import { resolveExample } from "./run.js";

/** The flags serve takes besides `fedtensor run`'s, each with a value. */
const serveFlags = new Set(["port", "host", "client-tokens", "tls-cert", "tls-key", "round-timeout", "join-wait", "num-shares", "reconstruction-threshold", "key-rounds", "clipping-range", "quantization-range", "modulus-range", "admin-token-file", "max-client-examples"]);

/** The serve flags out of `args`, the rest (the run's config and options) left in order. */
const seconds = (option: string, text: string | undefined, fallback: number): number => {
  if (text === undefined) return fallback;
  const value = Number(text);
  if (!(value > 0 && value <= 86_400)) throw ftError("FT305", { option, why: `expected seconds in (0, 86400], got ${text}` });
  return value;
};

/** A SecAgg+ share count as Flower's SecAggPlusWorkflow takes it: a whole number >= 2, or a proportion in (0, 1]. */
const shareCount = (option: string, text: string | undefined): number | undefined => {
  if (text === undefined) return undefined;
  const value = Number(text);
  if (text.trim() === "" || !((value > 0 && value <= 1) || (Number.isSafeInteger(value) && value >= 2)))
    throw ftError("FT305", { option, why: `expected a whole number >= 2 or a proportion in (0, 1], got ${text}` });
  return value;
};

/** A SecAgg+ range flag as Flower's SecAggPlusWorkflow takes it, in the protocol's domain (FT305). Whether the cohort's sum fits is FT342. */
const range = (name: keyof typeof rangeDomains, text: string | undefined): number | undefined => {
  if (text === undefined) return undefined;
  const value = text.trim() === "" ? NaN : Number(text);
  const option = `--${name.replace("_", "-")}`;
  if (!rangeDomains[name].holds(value)) throw ftError("FT305", { option, why: `expected ${rangeDomains[name].expected}, got ${text}` });
  return value;
};

export const serveCommand: Command = {
  name: "serve",
  summary: "run a training run with real clients: `fedtensor client` processes and browser tabs",
  usage: [
    "usage: fedtensor serve [example | config.json] --client-tokens FILE [--port 8080] [--host 127.0.0.1]",
    "                       [--tls-cert cert.pem --tls-key key.pem] [--round-timeout 60] [--join-wait 5]",
    "                       [--num-shares N|P --reconstruction-threshold T|P] [--key-rounds K]",
    "                       [--clipping-range C --quantization-range Q --modulus-range M]",
    "                       [--admin-token-file FILE] [--max-client-examples N]",
    "                       [fedtensor run's options: --rounds, --clients-per-round, --min-clients, --resume, ...]",
    "",
    "Serves the run at ws://HOST:PORT/fedtensor (wss:// with TLS) and the browser client at",
    "http(s)://HOST:PORT/client. Each round samples --clients-per-round of the connected clients",
    "(once --min-clients are connected), ships them the client part (an ONNX model, once per client)",
    "and merges their updates; metrics, plots and checkpoints go to --out. docs/deployment.md.",
    "",
    "  --client-tokens FILE   one secret token per line, one per client; others are refused and logged.",
    "                         SIGHUP rereads it: a client whose line is gone is disconnected (revoked)",
    "  --admin-token-file FILE  a secret token (one line, >= 16 characters) that turns on GET /healthz, /status",
    "                         and /metrics (Prometheus) for requests with `Authorization: Bearer <token>`",
    "  --max-client-examples N  the most examples a client may claim (default: the largest client of the run's",
    "                         partition of its data set); a larger claim is refused (FT350)",
    "  --port P               the port (default 8080; 0 picks a free one)",
    "  --host H               the address to listen on (default 127.0.0.1; 0.0.0.0 for other machines)",
    "  --tls-cert/--tls-key   PEM files: serve wss:// and https://",
    "  --round-timeout S      seconds a client has to answer a round's task (default 60)",
    "  --join-wait S          seconds a round waits for --clients-per-round once --min-clients are there (default 5)",
    "  --num-shares N|P       SecAgg+ (--aggregator secure, distributed-dp): shares of each client's secrets, one per",
    "                         neighbour plus its own; a count, or a proportion in (0, 1] of the cohort (Flower's",
    "                         num_shares). Raised to odd, capped at the cohort. Default 2 ceil(log2 n) + 1",
    "  --reconstruction-threshold T|P  shares that rebuild a secret: a count, or a proportion in (0, 1] of",
    "                         num_shares; a strict majority of it for every cohort size (FT341). Default: a majority",
    "  --key-rounds K         SecAgg+: rounds one key setup serves. After a round no client dropped out of, the next",
    "                         rounds (to K in all) with the same cohort reuse its keys: 3 messages a client instead of 5.",
    "                         1 to 16; default 1 (a full setup every round). docs/deployment.md, \"Key reuse\"",
    "  --clipping-range C     SecAgg+ (--aggregator secure only): each value a client sends is clipped to [-C, C]",
    "                         (finite ones; NaN or infinity is FT309 on the client). Default 8 (Flower's clipping_range)",
    "  --quantization-range Q clipped values map to whole numbers in [0, Q], rounded stochastically: steps of 2C / Q.",
    "                         A whole number >= 1. Default 2^22 (4194304)",
    "  --modulus-range M      masks and sums live mod M, a power of two up to 2^32 (the default). --clients-per-round",
    "                         x Q must stay below M, or the sum would wrap (FT342). distributed-dp fixes M from --ddp-bits",
  ].join("\n"),
  async run(args) {
    const { flags, rest } = takeFlags(args, serveFlags);
    const tokensPath = flags["client-tokens"];
    if (tokensPath === undefined) throw new UsageError("--client-tokens FILE is required: one token per client (for example `openssl rand -hex 16` per line)");
    if ((flags["tls-cert"] === undefined) !== (flags["tls-key"] === undefined)) throw new UsageError("--tls-cert and --tls-key go together");
    const port = Number(flags.port ?? 8080);
    if (!Number.isInteger(port) || port < 0 || port > 65535) throw ftError("FT305", { option: "--port", why: `expected a port from 0 to 65535, got ${flags.port}` });
    const keyRounds = flags["key-rounds"] === undefined ? undefined : resolveKeyRounds(Number(flags["key-rounds"]));
    const shares = { num_shares: shareCount("--num-shares", flags["num-shares"]), reconstruction_threshold: shareCount("--reconstruction-threshold", flags["reconstruction-threshold"]), ...(keyRounds === undefined ? {} : { key_rounds: keyRounds }) };
    const ranges = {
      clipping_range: range("clipping_range", flags["clipping-range"]),
      quantization_range: range("quantization_range", flags["quantization-range"]),
      modulus_range: range("modulus_range", flags["modulus-range"]),
    };
    // Loaded here so that other commands start without TensorFlow.js.
    const { loadRunArguments } = await import("../lib/run/config.js");
    const { config } = await loadRunArguments(resolveExample(rest));
    const { readTokens } = await import("../deploy/server/clients.js");
    const { serve } = await import("../deploy/server/coordinator.js");
    const { readAdminToken } = await import("../deploy/server/admin.js");
    const log = (line: string) => console.log(`${new Date().toISOString()} ${line}`);
    const maxExamples = flags["max-client-examples"] === undefined ? undefined : Number(flags["max-client-examples"]);
    if (maxExamples !== undefined && !(Number.isSafeInteger(maxExamples) && maxExamples >= 1 && maxExamples <= 2 ** 31 - 1))
      throw ftError("FT305", { option: "--max-client-examples", why: `expected a whole number from 1 to 2147483647, got ${flags["max-client-examples"]}` });
    const adminPath = flags["admin-token-file"];
    let onHangup: (() => void) | undefined;
    const result = await serve(config, {
      host: flags.host ?? "127.0.0.1",
      port,
      tokens: readTokens(tokensPath),
      ...(adminPath === undefined ? {} : { adminToken: readAdminToken(adminPath) }),
      ...(maxExamples === undefined ? {} : { maxClientExamples: maxExamples }),
      // SIGHUP rereads --client-tokens (docs/deployment.md, "Revoking a client"); a file that does not read leaves the tokens as they were.
      onListening: (_url, control) => {
        onHangup = () => {
          try {
            const reload = control.reloadTokens(readTokens(tokensPath));
            log(`SIGHUP: reloaded ${reload.tokens.size} tokens from ${tokensPath}; revoked: ${reload.revoked.join(", ") || "none"}; added: ${reload.added.join(", ") || "none"}`);
          } catch (error) {
            log(ftError("FT354", { path: tokensPath, why: (error as Error).message }).message);
          }
        };
        process.on("SIGHUP", onHangup);
      },
      ...(flags["tls-cert"] === undefined ? {} : { tls: { cert: flags["tls-cert"], key: flags["tls-key"]! } }),
      deadlineMs: seconds("--round-timeout", flags["round-timeout"], 60) * 1000,
      joinWaitMs: seconds("--join-wait", flags["join-wait"], 5) * 1000,
      shares,
      ranges,
      log,
    }).finally(() => onHangup !== undefined && process.off("SIGHUP", onHangup));
    const accuracy = result.accuracy === undefined ? "not evaluated" : `${(result.accuracy * 100).toFixed(2)}%`;
    console.log(`final test accuracy: ${accuracy} after ${result.rounds} rounds; metrics, plot and checkpoints in ${result.outDir}/`);
    return 0;
  },
};
