import { mkdir } from "node:fs/promises";
import { resolve } from "node:path";
import { build } from "esbuild";

/**
 * Bundles the gateway Worker as the tests' second edge: a separately loaded
 * Worker (own isolate, own caches) bound to the same Durable Object
 * namespaces, standing in for another edge location.
 */
export async function buildSecondEdge(root: string, project: string): Promise<string> {
	const outdir = resolve(root, ".test-build");
	await mkdir(outdir, { recursive: true });
	// One file per test project: projects set up at the same time, and must not write one file at once.
	const outfile = resolve(outdir, `edge-b-${project}.js`);
	await build({
		entryPoints: [resolve(root, "src/index.ts")],
		outfile,
		bundle: true,
		format: "esm",
		platform: "neutral",
		target: "es2022",
		mainFields: ["module", "main"],
		conditions: ["workerd", "worker", "import"],
		external: ["cloudflare:*"],
		logLevel: "warning",
	});
	return outfile;
}
