/**
 * `npm run deploy-check` as an operator runs it before a deploy: on this clone's wrangler.toml it
 * builds the Worker and passes; on a copy missing what the gateway needs it fails before building,
 * naming the setting and what to do.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { CliRun } from "./run-cli.ts";

const ROOT = join(import.meta.dirname, "..", "..");
const SCRIPT = join(ROOT, "scripts", "deploy-check", "deploy-check.ts");
/** Each run builds the Worker with wrangler: about 20 s alone, more beside the other CLI tests on two cores. */
const BUILD_TEST_TIMEOUT_MS = 90_000;

function deployCheck(args: string[] = []): Promise<CliRun> {
	return new Promise((resolve) => {
		execFile(
			process.execPath,
			[SCRIPT, ...args],
			{ cwd: ROOT, env: { ...process.env, NO_COLOR: "1" }, timeout: BUILD_TEST_TIMEOUT_MS },
			(error, stdout, stderr) => {
				resolve({ code: error ? (typeof error.code === "number" ? error.code : 1) : 0, stdout, stderr });
			},
		);
	});
}

/** This clone's wrangler.toml, edited, in a temporary directory (its paths made absolute). */
function editedConfig(edit: (toml: string) => string): string {
	const toml = readFileSync(join(ROOT, "wrangler.toml"), "utf8")
		.replace('main = "src/index.ts"', `main = ${JSON.stringify(join(ROOT, "src", "index.ts"))}`)
		.replace('"./scripts/bundle/', `"${join(ROOT, "scripts", "bundle")}/`);
	const edited = edit(toml);
	expect(edited, "the edit must change the file").not.toBe(toml);
	const file = join(mkdtempSync(join(tmpdir(), "deploy-check-")), "wrangler.toml");
	writeFileSync(file, edited);
	return file;
}

describe("npm run deploy-check", { timeout: BUILD_TEST_TIMEOUT_MS }, () => {
	it("passes on this clone's wrangler.toml, printing the bundle's measured size in MiB against both plans' limits, with zod's locales left out", async () => {
		const run = await deployCheck();
		expect(run.code, run.stderr).toBe(0);
		expect(run.stdout).toMatch(
			/^✓ bundle: \d+\.\d\d MiB, \d+\.\d\d MiB gzipped \(the limit: 3 MiB gzipped on Workers Free, 10 MiB on Workers Paid; measured by wrangler deploy --dry-run\)$/m,
		);
		expect(run.stdout).toContain("✓ zod: English only");
		expect(run.stdout).toContain("openssl rand -base64 32 | npx wrangler secret put ADMIN_TOKEN");
	});

	it("a Durable Object class the Worker exports without a SQLite migration fails after the build, naming the class", async () => {
		const config = editedConfig((toml) =>
			toml.replace('tag = "v3"\nnew_sqlite_classes = ["TokenVaultDO"]', 'tag = "v3"'),
		);
		const run = await deployCheck(["--config", config]);
		expect(run.code).toBe(1);
		expect(run.stderr).toContain("TokenVaultDO is in no migration's new_sqlite_classes");
	});

	it("a wrangler.toml without the OAUTH_KV namespace fails, naming the binding and how to add it", async () => {
		const config = editedConfig((toml) => toml.replace('[[kv_namespaces]]\nbinding = "OAUTH_KV"\n', ""));
		const run = await deployCheck(["--config", config]);
		expect(run.code).toBe(1);
		expect(run.stderr).toContain('KV namespace OAUTH_KV is missing: add [[kv_namespaces]] binding = "OAUTH_KV"');
		expect(run.stdout).not.toContain("✓ bundle");
	});

	it("a secret written into [vars] and two rate limits sharing a namespace_id both fail, each with what to do", async () => {
		const config = editedConfig((toml) =>
			toml
				.replace("[vars]\n", '[vars]\nADMIN_TOKEN = "not-a-secret-any-more-0123456789abcdef"\n')
				.replace('namespace_id = "1004"', 'namespace_id = "1001"'),
		);
		const run = await deployCheck(["--config", config]);
		expect(run.code).toBe(1);
		expect(run.stderr).toContain(
			"ADMIN_TOKEN is in [vars], where it is uploaded in plain text and shown in the dashboard: remove it and run `openssl rand -base64 32 | npx wrangler secret put ADMIN_TOKEN`",
		);
		expect(run.stderr).toContain("Rate limits KEY_RATE_LIMITER and KEY_RATE_LIMITER_HIGH share namespace_id 1001");
	});

	it("a route whose host ALLOWED_HOSTS does not list fails, since that host would answer 403", async () => {
		const config = editedConfig((toml) =>
			toml.replace(
				"keep_names = false\n",
				'keep_names = false\nroutes = [{ pattern = "mcp.example.com", custom_domain = true }]\n',
			),
		);
		const run = await deployCheck(["--config", config]);
		expect(run.code).toBe(1);
		expect(run.stderr).toContain("Route host mcp.example.com is not in ALLOWED_HOSTS");
	});
});
