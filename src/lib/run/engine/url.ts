/**
 * Redis URLs as `--engine` and `fedtensor worker --redis` take them, checked before anything
 * connects: ioredis throws a bare `Invalid URL` TypeError for a port out of range or a stray
 * space, which would surface as an internal error rather than FT305.
 */

/** Why `text` is not a redis://host:port (or rediss://) URL, or undefined when it is one. */
export function redisUrlProblem(text: string): string | undefined {
  if (/\s/.test(text)) return "it holds a space or another blank";
  if (!/^rediss?:\/\//.test(text)) return "it does not start with redis:// or rediss://";
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return "it is not a URL (a port must be a whole number from 1 to 65535)";
  }
  if (url.hostname === "") return "it names no host";
  if (url.port === "0") return "port 0 is no port to connect to";
  return undefined;
}
