#!/usr/bin/env node
// The `mcpgw` command. Plain JavaScript, so that an older Node reads this far and the version check
// (scripts/node-check.mjs, the one `npm start` runs too) says why it stops, instead of failing on the
// TypeScript entry with ERR_UNKNOWN_FILE_EXTENSION.
await import("../node-check.mjs");
// Output piped into a reader that stops early (`mcpgw servers | head`) is not an error of the command.
process.stdout.on("error", (error) => {
	if (error.code === "EPIPE") process.exit(process.exitCode ?? 0);
	throw error;
});
const { main } = await import("./main.ts");
process.exitCode = await main(process.argv);
