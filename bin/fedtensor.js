#!/usr/bin/env node
// The `fedtensor` command; the CLI itself is compiled to dist/ by `npm run build` (run by npm ci).
import { main } from "../dist/src/cli/main.js";

process.exitCode = await main(process.argv.slice(2));
