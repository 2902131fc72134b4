/**
 * `npm start`: the gateway on this machine with a demo upstream behind it,
 * ready to use. It creates `.dev.vars` with random secrets on first run, starts
 * the demo MCP servers, a local OpenID Connect provider for OAuth sign-in
 * (demo users, password `demo`) and `wrangler dev`, registers the demo server,
 * creates an API key and prints how to connect. Ctrl-C stops everything.
 *
 * The gateway's traces go to a local OTLP receiver (scripts/otlp-receiver.ts), which prints
 * one line per span and keeps the last traces, unless .dev.vars names a collector of its own
 * (OTEL_EXPORTER_OTLP_ENDPOINT).
 *
 * Two of the demo servers act as the caller rather than as the operator:
 * `oauth-demo` authorizes each person at its own authorization server (the
 * first call answers with a link to connect an account there), and
 * `whoami-demo` verifies the gateway's signed identity assertion against the
 * gateway's JWKS and answers who it names.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { LATEST_PROTOCOL_VERSION } from "@modelcontextprotocol/sdk/types.js";
import { exportJWK, generateKeyPair } from "jose";
import { gatewayCallbackUrls } from "../src/auth/provider-callbacks.ts";
import { startIdentityUpstream } from "./fixtures/identity-upstream.ts";
import { startModernUpstream } from "./fixtures/modern-upstream.ts";
import { startOAuthUpstream } from "./fixtures/oauth-upstream.ts";
import { DEMO_PASSWORD, startIdp } from "./fixtures/oidc-idp.ts";
import { startUpstream } from "./fixtures/upstream-server.ts";
import { startLocalReceiver } from "./otlp-receiver.ts";

const HOST = "127.0.0.1";
const GATEWAY_PORT = 8787;
const UPSTREAM_PORT = 8788;
/** The demo upstream that speaks MCP 2026-07-28 only (stateless, no initialize). */
const MODERN_UPSTREAM_PORT = 8789;
/** The local OpenID Connect provider the gateway federates OAuth sign-in to. */
const IDP_PORT = 8790;
/** The demo upstream that takes each person's own OAuth token, with its own authorization server. */
const OAUTH_UPSTREAM_PORT = 8791;
/** The demo upstream that verifies the gateway's identity assertions against its JWKS. */
const IDENTITY_UPSTREAM_PORT = 8792;
/** The local OTLP/HTTP receiver the gateway's traces and metrics go to. */
const OTLP_RECEIVER_PORT = 8793;
/** Metrics every 10 s rather than the spec's 60 s: a local run is short. */
const LOCAL_METRIC_INTERVAL_MS = 10_000;
const GATEWAY = `http://${HOST}:${GATEWAY_PORT}`;
/** The gateway's client at the local identity provider; its secret is generated into `.dev.vars`. */
/** Where the MCP Inspector's web page is served (npx @modelcontextprotocol/inspector). */
const INSPECTOR_ORIGINS = "http://localhost:6274,http://127.0.0.1:6274";
const OIDC_DEFAULTS = { OIDC_ISSUER: `http://${HOST}:${IDP_PORT}`, OIDC_CLIENT_ID: "mcp-edge-gateway" };
const READY_TIMEOUT_MS = 60_000;

// Wrangler resolves wrangler.toml, .dev.vars and .wrangler/ from the working directory.
process.chdir(join(import.meta.dirname, ".."));

/** An ES256 private JWK with a `kid`, as JSON: what IDENTITY_SIGNING_KEY holds. */
async function newSigningKey(): Promise<string> {
	const { privateKey } = await generateKeyPair("ES256", { extractable: true });
	const jwk = await exportJWK(privateKey);
	return JSON.stringify({ ...jwk, kid: randomBytes(8).toString("hex"), alg: "ES256", use: "sig" });
}

/** `.dev.vars` holds the local secrets; reused across runs so existing sessions and keys keep working. */
async function ensureDevVars(): Promise<Record<string, string>> {
	const path = ".dev.vars";
	const text = existsSync(path) ? readFileSync(path, "utf8") : "";
	const vars: Record<string, string> = {};
	// Double-quoted, single-quoted (a JSON value such as the signing key) or bare, as dotenv reads them.
	for (const match of text.matchAll(/^\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(?:"([^"\n]*)"|'([^'\n]*)'|([^\n]*?))\s*$/gm)) {
		const value = match[2] ?? match[3] ?? match[4];
		if (match[1] && value !== undefined) vars[match[1]] = value;
	}
	// Only fill in what is missing: an operator's own values stay untouched.
	const secrets = ["ADMIN_TOKEN", "SESSION_SECRET", "KEY_SECRET", "OIDC_CLIENT_SECRET", "TOKEN_VAULT_KEY"].filter(
		(name) => !vars[name],
	);
	for (const name of secrets) vars[name] = randomBytes(32).toString("base64url"); // 43 chars
	const jsonSecrets = vars.IDENTITY_SIGNING_KEY ? [] : ["IDENTITY_SIGNING_KEY"];
	for (const name of jsonSecrets) vars[name] = await newSigningKey();
	const settings = Object.entries(OIDC_DEFAULTS).filter(([name]) => !vars[name]);
	for (const [name, value] of settings) vars[name] = value;
	const added = [...secrets, ...jsonSecrets, ...settings.map(([name]) => name)];
	if (added.length > 0) {
		// JSON holds double quotes: single quotes keep it literal.
		const quoted = (name: string) => (jsonSecrets.includes(name) ? `'${vars[name]}'` : `"${vars[name]}"`);
		const lines = added.map((name) => `${name}=${quoted(name)}`).join("\n");
		writeFileSync(path, `${text}${text && !text.endsWith("\n") ? "\n" : ""}${lines}\n`, { mode: 0o600 });
		console.log(`Wrote ${added.join(", ")} to ${path}.`);
	}
	return vars;
}

/** Whether something already listens on `port` (checked first, so a busy port is named, not a child's EADDRINUSE). */
function portBusy(port: number): Promise<boolean> {
	return new Promise((resolve) => {
		const socket = connect(port, HOST);
		socket.once("connect", () => {
			socket.destroy();
			resolve(true);
		});
		socket.once("error", () => resolve(false));
	});
}

/** Streams a child's output line by line with a prefix, so gateway logs stand apart from ours. */
function prefixLines(stream: NodeJS.ReadableStream | null, prefix: string): void {
	if (stream) createInterface({ input: stream }).on("line", (line) => console.log(`${prefix} ${line}`));
}

async function waitUntilHealthy(wrangler: ChildProcess): Promise<void> {
	const deadline = Date.now() + READY_TIMEOUT_MS;
	while (Date.now() < deadline) {
		if (wrangler.exitCode !== null) throw new Error(`wrangler dev exited with code ${wrangler.exitCode}.`);
		try {
			const response = await fetch(`${GATEWAY}/healthz`, { signal: AbortSignal.timeout(3_000) });
			if (response.status === 200) return;
		} catch {
			// Not listening yet.
		}
		await new Promise((resolve) => setTimeout(resolve, 250));
	}
	throw new Error(`The gateway did not answer ${GATEWAY}/healthz within ${READY_TIMEOUT_MS / 1000} s.`);
}

async function admin(token: string, method: string, path: string, body?: unknown): Promise<Record<string, unknown>> {
	const response = await fetch(`${GATEWAY}/admin${path}`, {
		method,
		headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
		...(body === undefined ? {} : { body: JSON.stringify(body) }),
	});
	const text = await response.text();
	if (!response.ok) throw new Error(`${method} /admin${path} failed: ${response.status} ${text}`);
	return JSON.parse(text) as Record<string, unknown>;
}

/** Where the local key's secret is kept between runs (a key's secret is shown only once, at creation). */
const LOCAL_KEY_FILE = join(".wrangler", "local-dev-key");

/**
 * The `local-dev` key of earlier runs while the gateway still has it, else a
 * new one (kept for the next run): one key for every run, not one per run.
 */
async function localDevKey(token: string): Promise<string> {
	if (existsSync(LOCAL_KEY_FILE)) {
		const [id, secret] = readFileSync(LOCAL_KEY_FILE, "utf8").trim().split(" ");
		const listed = await admin(token, "GET", "/keys");
		const keys = Array.isArray(listed.keys) ? (listed.keys as Array<{ id?: unknown }>) : [];
		if (id && secret && keys.some((entry) => entry.id === id)) return secret;
	}
	const created = await admin(token, "POST", "/keys", { name: "local-dev" });
	mkdirSync(".wrangler", { recursive: true });
	writeFileSync(LOCAL_KEY_FILE, `${String(created.id)} ${String(created.key)}\n`, { mode: 0o600 });
	return String(created.key);
}

const vars = await ensureDevVars();
const adminToken = vars.ADMIN_TOKEN ?? "";
const ports = [
	GATEWAY_PORT,
	UPSTREAM_PORT,
	MODERN_UPSTREAM_PORT,
	IDP_PORT,
	OAUTH_UPSTREAM_PORT,
	IDENTITY_UPSTREAM_PORT,
];
// An operator's own collector in .dev.vars wins; otherwise the local receiver.
const localTelemetry = !vars.OTEL_EXPORTER_OTLP_ENDPOINT;
if (localTelemetry) ports.push(OTLP_RECEIVER_PORT);
const busy = (await Promise.all(ports.map(async (port) => ((await portBusy(port)) ? [port] : [])))).flat();
if (busy.length > 0) {
	const which = busy.length === 1 ? `Port ${busy[0]} is` : `Ports ${busy.join(", ")} are`;
	console.error(`npm start failed: ${which} already in use: is another 'npm start' running?`);
	process.exit(1);
}

// In-process, so it stops with this script and its output needs no extra plumbing.
const upstream = await startUpstream({ name: "demo", port: UPSTREAM_PORT });
console.log(`Demo upstream MCP server listening at ${upstream.url}`);
const modernUpstream = await startModernUpstream({ name: "modern-demo", legacy: "reject", port: MODERN_UPSTREAM_PORT });
console.log(`Demo 2026-07-28 upstream MCP server listening at ${modernUpstream.url}`);
const idp = await startIdp({
	port: IDP_PORT,
	clients: [
		{
			client_id: vars.OIDC_CLIENT_ID ?? OIDC_DEFAULTS.OIDC_CLIENT_ID,
			client_secret: vars.OIDC_CLIENT_SECRET ?? "",
			client_name: "MCP gateway",
			// Every callback of the gateway, under both names a browser may give it.
			redirect_uris: [GATEWAY, `http://localhost:${GATEWAY_PORT}`].flatMap(gatewayCallbackUrls),
		},
	],
});
console.log(`Local OpenID Connect provider listening at ${idp.issuer}`);
// Its authorization server signs people in as the IdP's demo users (a form: pick one).
const oauthUpstream = await startOAuthUpstream({ port: OAUTH_UPSTREAM_PORT });
console.log(
	`Demo OAuth upstream listening at ${oauthUpstream.url} (its authorization server: ${oauthUpstream.origin}/)`,
);
// It trusts what the gateway signs: the gateway's JWKS, the gateway's origin as issuer, its own URL as audience.
const identityUpstream = await startIdentityUpstream({
	port: IDENTITY_UPSTREAM_PORT,
	jwksUrl: `${GATEWAY}/.well-known/jwks.json`,
	issuer: GATEWAY,
});
console.log(`Demo identity upstream listening at ${identityUpstream.url} (verifies ${GATEWAY}/.well-known/jwks.json)`);
const otlpReceiver = localTelemetry
	? await startLocalReceiver({ port: OTLP_RECEIVER_PORT, prefix: "[trace]" })
	: undefined;
const otlpUrl = `http://${HOST}:${OTLP_RECEIVER_PORT}`;
if (otlpReceiver) console.log(`Local OTLP receiver listening at ${otlpUrl} (one [trace] line per span)`);

// stdin "ignore" turns off wrangler's interactive hotkeys, which would fight us for the terminal.
const wrangler = spawn(
	join("node_modules", ".bin", "wrangler"),
	[
		"dev",
		"--port",
		String(GATEWAY_PORT),
		"--ip",
		HOST,
		"--persist-to",
		join(".wrangler", "state"),
		// The demo upstream is plain http on loopback, which deployments refuse.
		"--var",
		"ALLOW_HTTP_UPSTREAMS:true",
		// The MCP Inspector runs in the browser on this origin; its requests to /mcp need CORS.
		"--var",
		`ALLOWED_ORIGINS:${INSPECTOR_ORIGINS}`,
		// Traces and metrics to the local receiver (OTLP/HTTP JSON), unless .dev.vars names a collector.
		...(localTelemetry
			? [
					"--var",
					`OTEL_EXPORTER_OTLP_ENDPOINT:${otlpUrl}`,
					"--var",
					`OTEL_METRIC_EXPORT_INTERVAL:${LOCAL_METRIC_INTERVAL_MS}`,
					// Each request's spans show at once, not coalesced for up to the spec's 5 s.
					"--var",
					"OTEL_BSP_SCHEDULE_DELAY:0",
				]
			: []),
	],
	{ stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, WRANGLER_SEND_METRICS: "false" } },
);
prefixLines(wrangler.stdout, "[wrangler]");
prefixLines(wrangler.stderr, "[wrangler]");

let stopping = false;
/** Stops wrangler (which stops workerd) and the upstream, then exits. */
async function stop(code: number): Promise<never> {
	if (!stopping) {
		stopping = true;
		console.log("Stopping the gateway, the demo upstreams and the identity provider...");
		if (wrangler.exitCode === null && wrangler.signalCode === null) {
			const exited = new Promise((resolve) => wrangler.once("exit", resolve));
			wrangler.kill("SIGTERM");
			// A wrangler that ignores SIGTERM must not keep the ports busy forever.
			const force = setTimeout(() => wrangler.kill("SIGKILL"), 5_000);
			await exited;
			clearTimeout(force);
		}
		await upstream.close();
		await modernUpstream.close();
		await idp.close();
		await oauthUpstream.close();
		await identityUpstream.close();
		await otlpReceiver?.close();
	}
	process.exit(code);
}
process.on("SIGINT", () => void stop(0));
process.on("SIGTERM", () => void stop(0));
wrangler.on("exit", (code) => {
	if (!stopping) {
		console.error(`wrangler dev exited unexpectedly (code ${code}).`);
		void stop(code ?? 1);
	}
});

try {
	await waitUntilHealthy(wrangler);
	// PUT is idempotent: on later runs the registration persisted in .wrangler/state is simply updated.
	await admin(adminToken, "PUT", "/servers/demo", { url: upstream.url });
	await admin(adminToken, "PUT", "/servers/modern-demo", { url: modernUpstream.url });
	// Each caller's own account at the upstream's authorization server, connected once through a link.
	await admin(adminToken, "PUT", "/servers/oauth-demo", { url: oauthUpstream.url, auth: { type: "oauth" } });
	// Each request carries an assertion of who is calling, signed by the gateway (IDENTITY_SIGNING_KEY).
	await admin(adminToken, "PUT", "/servers/whoami-demo", { url: identityUpstream.url, auth: { type: "identity" } });
	// The operator: dave signs in to the dashboard at /admin/ (the first matching rule decides, so his comes first).
	await admin(adminToken, "PUT", "/access-rules/demo-operator", {
		match: { subject: "dave" },
		servers: ["demo", "modern-demo", "oauth-demo", "whoami-demo"],
		admin: true,
		priority: 0,
	});
	// Who may sign in: people with a verified example.com address (alice; bob and carol are refused).
	await admin(adminToken, "PUT", "/access-rules/demo", {
		match: { emailDomain: "example.com" },
		servers: ["demo", "modern-demo", "oauth-demo", "whoami-demo"],
	});
	const key = await localDevKey(adminToken);
	const endpoint = `${GATEWAY}/mcp/demo`;
	const modernEndpoint = `${GATEWAY}/mcp/modern-demo`;
	const toolsList = JSON.stringify({
		jsonrpc: "2.0",
		id: 1,
		method: "tools/list",
		params: {
			_meta: {
				"io.modelcontextprotocol/protocolVersion": "2026-07-28",
				"io.modelcontextprotocol/clientInfo": { name: "curl", version: "1" },
				"io.modelcontextprotocol/clientCapabilities": {},
			},
		},
	});
	const whoamiCall = JSON.stringify({
		jsonrpc: "2.0",
		id: 1,
		method: "tools/call",
		params: {
			name: "whoami",
			arguments: {},
			_meta: {
				"io.modelcontextprotocol/protocolVersion": "2026-07-28",
				"io.modelcontextprotocol/clientInfo": { name: "curl", version: "1" },
				"io.modelcontextprotocol/clientCapabilities": {},
			},
		},
	});
	const localSignIn = vars.OIDC_ISSUER === idp.issuer;
	const signInAt = localSignIn ? "the local identity provider" : vars.OIDC_ISSUER;
	const signInHint = localSignIn
		? `as alice, password "${DEMO_PASSWORD}" (access rule "demo" grants verified\n   example.com addresses; bob and carol are refused).`
		: "with an account there (OIDC_ISSUER in .dev.vars is not the local provider).";
	const initialize = JSON.stringify({
		jsonrpc: "2.0",
		id: 1,
		method: "initialize",
		params: { protocolVersion: LATEST_PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: "curl", version: "1" } },
	});
	console.log(`
================================================================================
 mcp-edge-gateway is running

 MCP endpoint : ${endpoint}
 API key      : ${key}
 Admin token  : ${adminToken}   (from .dev.vars)
 Dashboard    : ${GATEWAY}/admin/   (the admin token, or sign in as dave / ${DEMO_PASSWORD})

 Try it with curl (the Mcp-Session-Id response header opens the session):
   curl -i ${endpoint} \\
     -H 'Authorization: Bearer ${key}' \\
     -H 'Content-Type: application/json' \\
     -H 'Accept: application/json, text/event-stream' \\
     -d '${initialize}'

 MCP 2026-07-28 (no session; either era works on every endpoint):
   curl ${modernEndpoint} \\
     -H 'Authorization: Bearer ${key}' \\
     -H 'Content-Type: application/json' \\
     -H 'Accept: application/json, text/event-stream' \\
     -H 'MCP-Protocol-Version: 2026-07-28' -H 'Mcp-Method: tools/list' \\
     -d '${toolsList}'

 Servers that see the caller, not the operator:
   oauth-demo  : an upstream with its own authorization server; each caller
                 connects their own account there once. Call oauth-demo's
                 whoami: the first call answers with a link to connect your
                 account (-32042 for a 2025 client; here, a tool error holding
                 the link). Open it in a browser, pick a user (alice, bob, ...),
                 then call again: whoami answers that user.
   whoami-demo : the gateway signs an assertion of who is calling (ES256, its
                 JWKS at ${GATEWAY}/.well-known/jwks.json), which the upstream
                 verifies; its whoami answers the caller (key:<id> for an API key).
   curl ${GATEWAY}/mcp/oauth-demo \
     -H 'Authorization: Bearer ${key}' \
     -H 'Content-Type: application/json' \
     -H 'Accept: application/json, text/event-stream' \
     -H 'MCP-Protocol-Version: 2026-07-28' -H 'Mcp-Method: tools/call' -H 'Mcp-Name: whoami' \
     -d '${whoamiCall}'
   (and the same with ${GATEWAY}/mcp/whoami-demo)

 Try it with the MCP Inspector's command line:
   npx @modelcontextprotocol/inspector --cli ${endpoint} --transport http \\
     --header "Authorization: Bearer ${key}" --method tools/list
   or its window (npx @modelcontextprotocol/inspector opens on its server list): add a server,
   transport "Streamable HTTP", URL ${endpoint}, header "Authorization: Bearer ${key}", connect.

 Traces: ${otlpReceiver ? `one [trace] line per span below; the last traces at ${otlpUrl}/traces` : `sent to ${vars.OTEL_EXPORTER_OTLP_ENDPOINT} (OTEL_EXPORTER_OTLP_ENDPOINT in .dev.vars)`}

 Sign in with OAuth instead of an API key:
   connect an OAuth-capable MCP client (e.g. the MCP Inspector, no header) to
   ${GATEWAY}/mcp; it sends you to ${signInAt} to sign in,
   ${signInHint}

 Press Ctrl-C to stop.
================================================================================`);
} catch (error) {
	console.error(`npm start failed: ${error instanceof Error ? error.message : String(error)}`);
	await stop(1);
}
