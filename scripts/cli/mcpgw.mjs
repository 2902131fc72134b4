#!/usr/bin/env node
// The `mcpgw` command. Plain JavaScript, so that an older Node reads this far and the version check
// (scripts/node-check.mjs, the one `npm start` runs too) says why it stops, instead of failing on the
// TypeScript entry with ERR_UNKNOWN_FILE_EXTENSION.
await import("../node-check.mjs");
const { main } = await import("./main.ts");
process.exitCode = await main(process.argv);
