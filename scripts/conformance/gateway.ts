/**
 * The gateway as `npm run conformance` runs it: built once, then served by
 * `wrangler dev` as often as a part of the run needs its own instance, each
 * with fresh secrets, state and dev registry in a directory of its own (the
 * user's .dev.vars and .wrangler/state are never touched).
 */
import { randomBytes } from "node:crypto";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Child, Processes } from "../processes.ts";
import { buildWorker, ROOT, startWranglerDev, wranglerEnv } from "../wrangler-dev.ts";

const REQUEST_TIMEOUT_MS = 30_000;
const CONFIG = join(ROOT, "wrangler.toml");

export interface GatewayBuild {
	/** The built Worker's entry module. */
	entry: string;
}

export interface RunningGateway {
	child: Child;
	/** `http://127.0.0.1:<port>`. */
	url: string;
	adminToken: string;
	/** workerd's inspector (Chrome DevTools protocol), for profiles (scripts/bench/profile.ts). */
	inspectorPort: number;
}

/** Wrangler's environment for the gateway's processes under `dir`, without colour codes in their output. */
function gatewayEnv(dir: string): NodeJS.ProcessEnv {
	return { ...wranglerEnv(dir), NO_COLOR: "1", FORCE_COLOR: "0" };
}

/** Builds the gateway once (`wrangler deploy --dry-run`) into `dir`; `config`: another clone's wrangler.toml. */
export async function buildGateway(procs: Processes, dir: string, config = CONFIG): Promise<GatewayBuild> {
	const { entry } = await buildWorker(procs, {
		name: "gateway",
		config,
		outDir: join(dir, "gateway-bundle"),
		env: gatewayEnv(dir),
	});
	return { entry };
}

/**
 * Serves a build under `wrangler dev`, with its state, secrets and dev
 * registry in `dir`. HTTP upstreams are allowed (the reference is plain HTTP
 * on loopback) and Host must name this machine. `vars` and `secrets` add to
 * the generated ADMIN_TOKEN, SESSION_SECRET and KEY_SECRET; `port` fixes the
 * port when something must know it beforehand (a free one otherwise).
 */
export async function startGateway(
	procs: Processes,
	build: GatewayBuild,
	options: {
		name: string;
		dir: string;
		port?: number;
		/** Another wrangler.toml than this clone's (another clone's, or one with other limits). */
		config?: string;
		vars?: Record<string, string>;
		secrets?: Record<string, string>;
	},
): Promise<RunningGateway> {
	mkdirSync(options.dir, { recursive: true });
	const adminToken = randomBytes(32).toString("base64url");
	const secrets = {
		ADMIN_TOKEN: adminToken,
		SESSION_SECRET: randomBytes(32).toString("base64url"),
		KEY_SECRET: randomBytes(32).toString("base64url"),
		...options.secrets,
	};
	const envFile = join(options.dir, "gateway.env");
	const lines = Object.entries(secrets).map(([name, value]) => `${name}="${value}"\n`);
	writeFileSync(envFile, lines.join(""), { mode: 0o600 });
	const vars = { ALLOW_HTTP_UPSTREAMS: "true", ALLOWED_HOSTS: "localhost,127.0.0.1", ...options.vars };
	const { child, url, inspectorPort } = await startWranglerDev(procs, {
		name: options.name,
		config: options.config ?? CONFIG,
		entry: build.entry,
		persistTo: join(options.dir, "state"),
		env: gatewayEnv(options.dir),
		port: options.port,
		extraArgs: [
			"--env-file",
			envFile,
			...Object.entries(vars).flatMap(([name, value]) => ["--var", `${name}:${value}`]),
		],
	});
	return { child, url, adminToken, inspectorPort };
}

/** A JSON request to the gateway (JSON both ways); fails on any status but 2xx, quoting the reply. */
async function requestJson<T>(
	gateway: RunningGateway,
	method: string,
	path: string,
	body: unknown,
	headers: Record<string, string> = {},
): Promise<T> {
	const response = await fetch(`${gateway.url}${path}`, {
		method,
		headers: { ...headers, "content-type": "application/json" },
		body: JSON.stringify(body),
		signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
	});
	const text = await response.text();
	if (!response.ok) throw new Error(`${method} ${path} failed: ${response.status} ${text}`);
	return JSON.parse(text) as T;
}

/** An admin API call, `/admin<path>`, with the gateway's admin token. */
export function admin<T>(gateway: RunningGateway, method: string, path: string, body: unknown): Promise<T> {
	return requestJson<T>(gateway, method, `/admin${path}`, body, { authorization: `Bearer ${gateway.adminToken}` });
}

/**
 * Registers a public client (PKCE, no secret) with the gateway's
 * authorization server by dynamic client registration (RFC 7591), as MCP
 * clients do; returns its client_id.
 */
export async function registerPublicClient(
	gateway: RunningGateway,
	name: string,
	redirectUri: string,
): Promise<string> {
	const registered = await requestJson<{ client_id?: unknown }>(gateway, "POST", "/oauth/register", {
		client_name: name,
		redirect_uris: [redirectUri],
		token_endpoint_auth_method: "none",
		grant_types: ["authorization_code", "refresh_token"],
	});
	if (typeof registered.client_id !== "string")
		throw new Error("the gateway registered the client without a client_id");
	return registered.client_id;
}
