/**
 * `npm start`: the gateway on this machine with a demo upstream behind it,
 * ready to use. It creates `.dev.vars` with random secrets on first run, starts
 * the demo MCP servers, a local OpenID Connect provider for OAuth sign-in
 * (demo users, password `demo`) and `wrangler dev`, registers the demo server,
 * creates an API key and prints how to connect. Beside them runs a small REST
 * API, `rest-demo`, registered from its OpenAPI document, and an MCP App, the
 * extension's system monitor example, registered as `system-monitor`.
 *
 * Ports: the gateway on a base port (8787, or `--port N`, or `PORT`), the rest
 * at fixed offsets above it (scripts/local-ports.ts). Stopping: Ctrl-C, SIGTERM
 * or SIGHUP, to this script or to the npm that runs it (package.json execs it,
 * so npm's signals reach it), or npm going away, stops wrangler's whole process
 * group (workerd, esbuild) and the servers it runs in-process (scripts/processes.ts).
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

import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { LATEST_PROTOCOL_VERSION } from "@modelcontextprotocol/sdk/types.js";
import { exportJWK, generateKeyPair } from "jose";
import { gatewayCallbackUrls } from "../src/auth/provider-callbacks.ts";
import { registerDemo } from "./demo-registry.ts";
import { startAppServer } from "./fixtures/app-servers.ts";
import { startIdentityUpstream } from "./fixtures/identity-upstream.ts";
import { startModernUpstream } from "./fixtures/modern-upstream.ts";
import { startOAuthUpstream } from "./fixtures/oauth-upstream.ts";
import { DEMO_PASSWORD, startIdp } from "./fixtures/oidc-idp.ts";
import { startRestDemo } from "./fixtures/rest-demo.ts";
import { startUpstream } from "./fixtures/upstream-server.ts";
import { basePortFrom, busyPortsMessage, busyServices, type LocalService, localPorts } from "./local-ports.ts";
import { startLocalReceiver } from "./otlp-receiver.ts";
import { HOST, installShutdown, Processes, waitForLine, waitHealthy } from "./processes.ts";

const options = basePortFrom(process.argv.slice(2), process.env);
if ("problem" in options) {
	console.error(`npm start failed: ${options.problem}`);
	process.exit(2);
}
const PORTS = localPorts(options.base);
const {
	gateway: GATEWAY_PORT,
	upstream: UPSTREAM_PORT,
	modernUpstream: MODERN_UPSTREAM_PORT,
	idp: IDP_PORT,
	oauthUpstream: OAUTH_UPSTREAM_PORT,
	identityUpstream: IDENTITY_UPSTREAM_PORT,
	otlpReceiver: OTLP_RECEIVER_PORT,
	restDemo: REST_DEMO_PORT,
	appDemo: APP_DEMO_PORT,
} = PORTS;
/** The last of this run's ports, for the banner. */
const HIGHEST_PORT = Math.max(...Object.values(PORTS));
/** Metrics every 10 s rather than the spec's 60 s: a local run is short. */
const LOCAL_METRIC_INTERVAL_MS = 10_000;
const GATEWAY = `http://${HOST}:${GATEWAY_PORT}`;
/** Where the MCP Inspector's web page is served (npx @modelcontextprotocol/inspector). */
const INSPECTOR_ORIGINS = "http://localhost:6274,http://127.0.0.1:6274";
/** The local provider's issuer on this run's port. */
const LOCAL_ISSUER = `http://${HOST}:${IDP_PORT}`;
/** The gateway's client at the local identity provider; its secret is generated into `.dev.vars`. */
const OIDC_DEFAULTS = { OIDC_ISSUER: LOCAL_ISSUER, OIDC_CLIENT_ID: "mcp-edge-gateway" };
/**
 * An OIDC_ISSUER that is a loopback origin and nothing else is the local provider's, as an earlier
 * run wrote it, perhaps on another base port: it follows this run's.
 */
const LOCAL_ISSUER_LINE = /^(\s*OIDC_ISSUER\s*=\s*)(["']?)http:\/\/127\.0\.0\.1:\d+\/?\2\s*$/m;
const READY_TIMEOUT_MS = 60_000;

// Wrangler resolves wrangler.toml, .dev.vars and .wrangler/ from the working directory.
process.chdir(join(import.meta.dirname, ".."));

/** An ES256 private JWK with a `kid`, as JSON: what IDENTITY_SIGNING_KEY holds. */
async function newSigningKey(): Promise<string> {
	const { privateKey } = await generateKeyPair("ES256", { extractable: true });
	const jwk = await exportJWK(privateKey);
	return JSON.stringify({ ...jwk, kid: randomBytes(8).toString("hex"), alg: "ES256", use: "sig" });
}

const DEV_VARS = ".dev.vars";

/** `.dev.vars` as dotenv reads it: double-quoted, single-quoted (a JSON value such as the signing key) or bare values. */
function readDevVars(): { text: string; vars: Record<string, string> } {
	const text = existsSync(DEV_VARS) ? readFileSync(DEV_VARS, "utf8") : "";
	const vars: Record<string, string> = {};
	for (const match of text.matchAll(/^\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(?:"([^"\n]*)"|'([^'\n]*)'|([^\n]*?))\s*$/gm)) {
		const value = match[2] ?? match[3] ?? match[4];
		if (match[1] && value !== undefined) vars[match[1]] = value;
	}
	return { text, vars };
}

/** `.dev.vars` holds the local secrets; reused across runs so existing sessions and keys keep working. */
async function ensureDevVars(): Promise<Record<string, string>> {
	const { text: original, vars } = readDevVars();
	let text = original;
	// The local provider of an earlier run on other ports: its issuer follows this run's port.
	if (vars.OIDC_ISSUER !== LOCAL_ISSUER && LOCAL_ISSUER_LINE.test(text)) {
		text = text.replace(LOCAL_ISSUER_LINE, `$1"${LOCAL_ISSUER}"`);
		vars.OIDC_ISSUER = LOCAL_ISSUER;
		console.log(`Set OIDC_ISSUER in ${DEV_VARS} to ${LOCAL_ISSUER}, the local provider on this run's ports.`);
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
		text = `${text}${text && !text.endsWith("\n") ? "\n" : ""}${lines}\n`;
		console.log(`Wrote ${added.join(", ")} to ${DEV_VARS}.`);
	}
	if (text !== original) writeFileSync(DEV_VARS, text, { mode: 0o600 });
	return vars;
}

async function admin(token: string, method: string, path: string, body?: unknown): Promise<Record<string, unknown>> {
	const response = await fetch(`${GATEWAY}/admin${path}`, {
		method,
		headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
		...(body === undefined ? {} : { body: JSON.stringify(body) }),
	});
	const text = await response.text();
	if (!response.ok) throw new Error(`${method} /admin${path} failed: ${response.status} ${text}`);
	return (text ? JSON.parse(text) : {}) as Record<string, unknown>;
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

/** The demo's private server: server-filesystem over this folder, reached only through a connector. */
const FILES_FOLDER = join(".wrangler", "demo-files");
const FILESYSTEM_SERVER = join("node_modules", "@modelcontextprotocol", "server-filesystem", "dist", "index.js");
/** How long the connector gets to dial the gateway and be welcomed. */
const CONNECTOR_READY_MS = 30_000;

/**
 * `mcpgw connect files`, as an operator would run it next to a private
 * server: a stdio server (one child per session) that the gateway reaches
 * over the WebSocket the connector dialled out, with no address of its own.
 * Each run makes a new token and revokes the earlier runs' ones.
 */
async function startFilesConnector(token: string): Promise<void> {
	const listed = await admin(token, "GET", "/servers/files/connector-tokens");
	const earlier = Array.isArray(listed.connectorTokens) ? (listed.connectorTokens as Array<{ id?: unknown }>) : [];
	for (const old of earlier) await admin(token, "DELETE", `/servers/files/connector-tokens/${String(old.id)}`);
	const made = await admin(token, "POST", "/servers/files/connector-tokens");
	mkdirSync(FILES_FOLDER, { recursive: true });
	const readme = join(FILES_FOLDER, "README.md");
	if (!existsSync(readme)) {
		writeFileSync(readme, "This folder is served by the `files` server, through a connector (`mcpgw connect`).\n");
	}
	const connector = procs.spawn(
		"mcpgw connect",
		process.execPath,
		[
			join("scripts", "cli", "mcpgw.mjs"),
			"connect",
			"files",
			"--url",
			GATEWAY,
			"--token",
			String(made.token),
			"--",
			process.execPath,
			FILESYSTEM_SERVER,
			resolve(FILES_FOLDER),
		],
		{ cwd: process.cwd() },
	);
	connector.onLine((line) => console.log(`[connector] ${line}`));
	await waitForLine(connector, /connected to /, CONNECTOR_READY_MS);
}

// An operator's own collector in .dev.vars wins; otherwise the local receiver.
const localTelemetry = !readDevVars().vars.OTEL_EXPORTER_OTLP_ENDPOINT;
const needed: LocalService[] = [
	"gateway",
	"upstream",
	"modernUpstream",
	"idp",
	"oauthUpstream",
	"identityUpstream",
	"restDemo",
	"appDemo",
];
if (localTelemetry) needed.push("otlpReceiver");
// Checked before anything is written or started: a run that cannot start changes nothing.
const busy = await busyServices(PORTS, needed);
if (busy.length > 0) {
	console.error(`npm start failed: ${await busyPortsMessage(options.base, PORTS, busy)}`);
	process.exit(1);
}

const procs = new Processes();
/** What runs in this process, closed on the way out (wrangler's group is stopped by `procs`). */
const servers: Array<{ close(): Promise<void> }> = [];
const { shutdown, stopping } = installShutdown(procs, "npm start", () =>
	Promise.all(servers.map((server) => server.close())),
);

const vars = await ensureDevVars();
const adminToken = vars.ADMIN_TOKEN ?? "";

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
// A REST API with its OpenAPI document at /openapi.json: the gateway makes each of its operations a tool.
const restDemo = await startRestDemo({ port: REST_DEMO_PORT });
const restDemoDocument = `${restDemo.base}/openapi.json`;
console.log(`Demo REST API listening at ${restDemo.base} (its OpenAPI document: ${restDemoDocument})`);
// A child process (the package runs as it ships), stopped with the servers below.
const appDemo = await startAppServer("monitor", APP_DEMO_PORT);
console.log(`Demo MCP App (the extension's system monitor) listening at ${appDemo.url}`);
const otlpReceiver = localTelemetry
	? await startLocalReceiver({ port: OTLP_RECEIVER_PORT, prefix: "[trace]" })
	: undefined;
const otlpUrl = `http://${HOST}:${OTLP_RECEIVER_PORT}`;
if (otlpReceiver) console.log(`Local OTLP receiver listening at ${otlpUrl} (one [trace] line per span)`);
servers.push(
	upstream,
	modernUpstream,
	idp,
	oauthUpstream,
	identityUpstream,
	restDemo,
	appDemo,
	...(otlpReceiver ? [otlpReceiver] : []),
);

// In a process group of its own (workerd and esbuild with it), stopped as one; its stdin ignored,
// which turns off wrangler's interactive hotkeys, and Ctrl-C in the terminal reaches only us.
const wrangler = procs.spawn(
	"wrangler dev",
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
	{ cwd: process.cwd(), env: { ...process.env, WRANGLER_SEND_METRICS: "false" } },
);
wrangler.onLine((line) => console.log(`[wrangler] ${line}`));
void wrangler.exited.then(() => {
	const { exitCode, signalCode } = wrangler.process;
	const how = exitCode === null ? `killed by ${signalCode}` : `exit code ${exitCode}`;
	if (!stopping()) void shutdown(exitCode || 1, `npm start: wrangler dev exited unexpectedly (${how}).`);
});

try {
	await waitHealthy(wrangler, `${GATEWAY}/healthz`, READY_TIMEOUT_MS);
	// PUT is idempotent: on later runs the registration persisted in .wrangler/state is simply updated.
	// The same servers and rules the page tests register, so the flows they drive are the ones people meet here.
	await registerDemo((method, path, body) => admin(adminToken, method, path, body), {
		demo: upstream.url,
		modernDemo: modernUpstream.url,
		oauthDemo: oauthUpstream.url,
		whoamiDemo: identityUpstream.url,
		restDemoDocument,
		systemMonitor: appDemo.url,
	});
	await startFilesConnector(adminToken);
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
                (named local-dev; for the README's examples: export MCP_API_KEY=${key})
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
   curl ${GATEWAY}/mcp/oauth-demo \\
     -H 'Authorization: Bearer ${key}' \\
     -H 'Content-Type: application/json' \\
     -H 'Accept: application/json, text/event-stream' \\
     -H 'MCP-Protocol-Version: 2026-07-28' -H 'Mcp-Method: tools/call' -H 'Mcp-Name: whoami' \\
     -d '${whoamiCall}'
   (and the same with ${GATEWAY}/mcp/whoami-demo)

 A private server, reached through a connector:
   files       : @modelcontextprotocol/server-filesystem over ${FILES_FOLDER}, a stdio
                 server run by \`mcpgw connect\` (one child per session), which dialled
                 out to the gateway: the server has no address and opens no port
                 (docs/connectors.md). Its tools are list_directory, read_text_file,
                 write_file and more, at ${GATEWAY}/mcp/files.

 A REST API, served from its OpenAPI document:
   rest-demo   : a small notes API at ${restDemo.base}; the gateway read its document
                 (${restDemoDocument}) and answers each operation as a tool itself,
                 sending one HTTP request per call (docs/openapi.md). Its tools are
                 at ${GATEWAY}/mcp/rest-demo.

 An MCP App, a tool whose answer a host shows in a View it renders (docs/apps.md):
   system-monitor : the MCP Apps extension's system monitor example at ${appDemo.url}.
                 Its get-system-info points at the View ui://system-monitor/mcp-app.html,
                 which polls poll-system-stats, a tool for the View only. Point an MCP Apps
                 host at ${GATEWAY}/mcp/system-monitor (or ${GATEWAY}/mcp).

 Try it with the MCP Inspector's command line:
   npx -y @modelcontextprotocol/inspector --cli ${endpoint} --transport http \\
     --header "Authorization: Bearer ${key}" --method tools/list
   or its window (npx -y @modelcontextprotocol/inspector opens on its server list): add a server,
   transport "Streamable HTTP", URL ${endpoint}, header "Authorization: Bearer ${key}", connect.

 Traces: ${otlpReceiver ? `one [trace] line per span below; the last traces at ${otlpUrl}/traces` : `sent to ${vars.OTEL_EXPORTER_OTLP_ENDPOINT} (OTEL_EXPORTER_OTLP_ENDPOINT in .dev.vars)`}

 Sign in with OAuth instead of an API key:
   connect an OAuth-capable MCP client (e.g. the MCP Inspector, no header) to
   ${GATEWAY}/mcp; it sends you to ${signInAt} to sign in,
   ${signInHint}

 Ports ${GATEWAY_PORT} to ${HIGHEST_PORT} (npm start -- --port <base> moves them). Press Ctrl-C to stop.
================================================================================`);
} catch (error) {
	await shutdown(1, `npm start failed: ${error instanceof Error ? error.message : String(error)}`);
}
