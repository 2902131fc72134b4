#!/usr/bin/env node
// The `mcpgw` command. Plain JavaScript, so that an older Node reads this far and says why it stops,
// instead of failing on the TypeScript entry with ERR_UNKNOWN_FILE_EXTENSION.
const [major = 0, minor = 0] = process.versions.node.split(".").map(Number);
if (major < 22 || (major === 22 && minor < 18)) {
	console.error(
		`mcpgw needs Node 22.18 or newer (it runs TypeScript as it is); this is Node ${process.versions.node}. Install it (nvm install 22, or https://nodejs.org) and run mcpgw again.`,
	);
	process.exit(1);
}
const { main } = await import("./main.ts");
process.exitCode = await main(process.argv);
