/**
 * The checkout as a user meets it (issue 34, item 11): `npx fedtensor` there installs the
 * checkout as a package, which runs npm's `prepare`; that rebuilds dist/ only when a source is
 * newer than the build (bin/build-if-stale.js), and the secrets the README's recipes write
 * into the checkout are ignored by git.
 */
import { spawnSync } from "node:child_process";
import { chmodSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, test } from "vitest";
import { deadline } from "./helpers/deadline.js";
import { tempDir } from "./run/temp-dir.js";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const lastOutput = join(root, "dist/page/client.js");

/** Runs the prepare script with a fake `npm` first on the PATH, which only says it was asked to build. */
function prepare() {
  const bin = tempDir("ft-fake-npm-");
  writeFileSync(join(bin, "npm"), '#!/bin/sh\necho "fake npm $*"\n');
  chmodSync(join(bin, "npm"), 0o755);
  return spawnSync(process.execPath, [join(root, "bin/build-if-stale.js")], { encoding: "utf8", env: { ...process.env, PATH: `${bin}:${process.env.PATH}` }, timeout: deadline(30_000) });
}

describe.skipIf(process.platform === "win32")("npm's prepare in the checkout", () => {
  test("does not build when dist/ is newer than every source, and builds when a source is newer", () => {
    const { atime, mtime } = statSync(lastOutput);
    try {
      utimesSync(lastOutput, atime, new Date());
      const fresh = prepare();
      expect(fresh.status).toBe(0);
      expect(fresh.stderr).toContain("dist/ is up to date with the sources; not rebuilding");
      expect(fresh.stdout).not.toContain("fake npm");
      // As if a source was saved after the last build.
      utimesSync(lastOutput, atime, new Date(0));
      const stale = prepare();
      expect(stale.status).toBe(0);
      expect(stale.stdout).toContain("fake npm run build");
    } finally {
      utimesSync(lastOutput, atime, mtime);
    }
  });
});

test.each(["tokens.txt", "token.txt", "secret.key"])("git ignores %s, a secret a README recipe writes into the checkout", (name) => {
  const check = spawnSync("git", ["check-ignore", "--no-index", name], { cwd: root, encoding: "utf8" });
  expect(check.stdout.trim()).toBe(name);
});
