/**
 * `npm run deploy-check`: what a deploy needs, checked offline. Reads wrangler.toml as wrangler does,
 * checks the bindings, secrets and hosts (config-checks.ts), builds the Worker exactly as `wrangler
 * deploy` would upload it (`wrangler deploy --dry-run --outdir <tmp>`), prints its size, and checks
 * that zod's locales stayed out of it (the `[alias]` in wrangler.toml). Exits 1 on any problem.
 *
 *   npm run deploy-check [-- --config path/to/wrangler.toml]
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { unstable_readConfig } from "wrangler";
import { checkConfig, checkExportedClasses, REQUIRED_SECRETS } from "./config-checks.ts";

const ROOT = join(import.meta.dirname, "..", "..");
const WRANGLER = join(ROOT, "node_modules", ".bin", "wrangler");
/**
 * Cloudflare's documented Worker size limits after compression, on the Workers Free and Paid plans:
 * https://developers.cloudflare.com/workers/platform/limits/#worker-size
 */
const FREE_PLAN_GZIP_KIB = 3 * 1024;
const PAID_PLAN_GZIP_KIB = 10 * 1024;
/** A zod locale's module; English (`en.js`, zod's default) is the one the bundle keeps. */
const LOCALE = /\/zod\/v4\/locales\/(?!en\.js$|index\.js$)[\w-]+\.js$/;

const { values } = parseArgs({ options: { config: { type: "string", default: join(ROOT, "wrangler.toml") } } });
const configPath = resolve(values.config);

function fail(lines: string[]): never {
	for (const line of lines) console.error(`✗ ${line}`);
	console.error(`deploy-check: ${configPath} is not ready to deploy.`);
	process.exit(1);
}

const config = unstable_readConfig({ config: configPath });
const { problems, warnings } = checkConfig(config);
for (const warning of warnings) console.log(`! ${warning}`);
if (problems.length > 0) fail(problems);
console.log("✓ bindings: Durable Objects (SQLite-backed), KV namespaces and rate limits as the gateway needs them");

const outDir = mkdtempSync(join(tmpdir(), "mcpgw-deploy-check-"));
try {
	const metafile = join(outDir, "meta.json");
	const build = spawnSync(
		WRANGLER,
		["deploy", "--dry-run", "--config", configPath, "--outdir", join(outDir, "bundle"), "--metafile", metafile],
		{ cwd: dirname(configPath), encoding: "utf8", env: { ...process.env, WRANGLER_SEND_METRICS: "false" } },
	);
	const output = `${build.stdout}${build.stderr}`;
	if (build.status !== 0) fail([`wrangler deploy --dry-run failed:\n${output}`]);
	const size = /Total Upload: ([\d.]+) KiB \/ gzip: ([\d.]+) KiB/.exec(output);
	if (size === null) fail([`wrangler deploy --dry-run printed no "Total Upload" line:\n${output}`]);
	const [total, gzip] = [Number(size[1]), Number(size[2])];
	// The one place the bundle's size is written down: docs/deploy.md points here rather than quote a figure that ages.
	const mib = (kib: number) => `${(kib / 1024).toFixed(2)} MiB`;
	const limits = `the limit: ${FREE_PLAN_GZIP_KIB / 1024} MiB gzipped on Workers Free, ${PAID_PLAN_GZIP_KIB / 1024} MiB on Workers Paid`;
	if (gzip > PAID_PLAN_GZIP_KIB) {
		fail([`the bundle is ${mib(total)}, ${mib(gzip)} gzipped: over every plan's limit (${limits}).`]);
	}
	console.log(`✓ bundle: ${mib(total)}, ${mib(gzip)} gzipped (${limits}; measured by wrangler deploy --dry-run)`);
	if (gzip > FREE_PLAN_GZIP_KIB) {
		console.log(`! the gzipped bundle is over the Workers Free plan's limit: deploy on Workers Paid.`);
	}
	// What esbuild put into the output, per input file: a locale listed as an input may still be tree-shaken.
	const meta = JSON.parse(readFileSync(metafile, "utf8")) as {
		outputs: Record<
			string,
			{ entryPoint?: string; exports?: string[]; inputs: Record<string, { bytesInOutput: number }> }
		>;
	};
	const entry = Object.values(meta.outputs).find((out) => out.entryPoint !== undefined);
	const classProblems = checkExportedClasses(config, entry?.exports ?? []);
	if (classProblems.length > 0) fail(classProblems);
	console.log(
		`✓ Durable Object classes: ${(entry?.exports ?? []).filter((name) => name !== "default").join(", ")}, each bound and SQLite-backed`,
	);
	const lostLocales = Object.values(meta.outputs).flatMap((out) =>
		Object.entries(out.inputs)
			.filter(([input, { bytesInOutput }]) => LOCALE.test(input) && bytesInOutput > 0)
			.map(([input]) => input),
	);
	if (lostLocales.length > 0) {
		fail([
			`zod's other locales are back in the bundle (${lostLocales.length} files, e.g. ${lostLocales[0]}): the [alias] for "../locales/index.js" in wrangler.toml no longer applies; see scripts/bundle/zod-locales.ts.`,
		]);
	}
	console.log("✓ zod: English only");
} finally {
	rmSync(outDir, { recursive: true, force: true });
}
console.log(
	`Ready to deploy. Set the secrets once per Worker, if not yet: ${REQUIRED_SECRETS.map((name) => `openssl rand -base64 32 | npx wrangler secret put ${name}`).join("; ")} (docs/deploy.md).`,
);
