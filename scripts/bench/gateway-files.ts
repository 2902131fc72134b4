/** The files a benchmarked gateway runs with: its temporary secrets and its configuration with the limits raised. */

import { randomBytes } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ROOT } from "../wrangler-dev.ts";

/**
 * Writes into `tmp` the gateway's `--env-file` (a fresh admin token and secrets) and its wrangler.toml
 * with the rate limits raised; the user's .dev.vars and wrangler.toml are never touched.
 */
export function writeGatewayFiles(tmp: string): { adminToken: string; envFile: string; gatewayConfig: string } {
	const adminToken = randomBytes(32).toString("base64url");
	const envFile = join(tmp, "gateway.env");
	// The bench upstreams are plain http on loopback, which deployments refuse. TOKEN_VAULT_KEY seals the
	// per-person stage's tokens in their vault.
	const secret = () => randomBytes(32).toString("base64url");
	writeFileSync(
		envFile,
		`ADMIN_TOKEN="${adminToken}"\nSESSION_SECRET="${secret()}"\nKEY_SECRET="${secret()}"\nTOKEN_VAULT_KEY="${secret()}"\nALLOW_HTTP_UPSTREAMS="true"\n`,
		{ mode: 0o600 },
	);
	// The benchmark drives one key far past the per-key rate limit of a deployment: the same
	// configuration with the limits raised, so the limiter still runs on every request.
	const gatewayConfig = join(tmp, "wrangler.toml");
	writeFileSync(
		gatewayConfig,
		readFileSync(join(ROOT, "wrangler.toml"), "utf8").replace(/limit = \d+, period/g, "limit = 100000000, period"),
	);
	return { adminToken, envFile, gatewayConfig };
}
