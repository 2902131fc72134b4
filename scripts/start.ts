/**
 * `npm start`: the gateway on this machine with a demo upstream behind it,
 * ready to use. It creates `.dev.vars` with random secrets on first run, starts
 * the demo MCP servers, a local OpenID Connect provider for OAuth sign-in
 * (demo users, password `demo`) and `wrangler dev`, registers the demo server,
 * creates an API key and prints how to connect. Ctrl-C stops everything.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { LATEST_PROTOCOL_VERSION } from "@modelcontextprotocol/sdk/types.js";
import { startModernUpstream } from "./fixtures/modern-upstream.ts";
import { DEMO_PASSWORD, startIdp } from "./fixtures/oidc-idp.ts";
import { startUpstream } from "./fixtures/upstream-server.ts";

const HOST = "127.0.0.1";
const GATEWAY_PORT = 8787;
const UPSTREAM_PORT = 8788;
/** The demo upstream that speaks MCP 2026-07-28 only (stateless, no initialize). */
const MODERN_UPSTREAM_PORT = 8789;
/** The local OpenID Connect provider the gateway federates OAuth sign-in to. */
const IDP_PORT = 8790;
const GATEWAY = `http://${HOST}:${GATEWAY_PORT}`;
/** The gateway's client at the local identity provider; its secret is generated into `.dev.vars`. */
/** Where the MCP Inspector's web page is served (npx @modelcontextprotocol/inspector). */
const INSPECTOR_ORIGINS = "http://localhost:6274,http://127.0.0.1:6274";
const OIDC_DEFAULTS = { OIDC_ISSUER: `http://${HOST}:${IDP_PORT}`, OIDC_CLIENT_ID: "mcp-edge-gateway" };
const READY_TIMEOUT_MS = 60_000;

// Wrangler resolves wrangler.toml, .dev.vars and .wrangler/ from the working directory.
process.chdir(join(import.meta.dirname, ".."));

/** `.dev.vars` holds the local secrets; reused across runs so existing sessions and keys keep working. */
function ensureDevVars(): Record<string, string> {
	const path = ".dev.vars";
	const text = existsSync(path) ? readFileSync(path, "utf8") : "";
	const vars: Record<string, string> = {};
	for (const match of text.matchAll(/^\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*"?([^"\n]*)"?\s*$/gm)) {
		if (match[1] && match[2] !== undefined) vars[match[1]] = match[2];
	}
	// Only fill in what is missing: an operator's own values stay untouched.
	const secrets = ["ADMIN_TOKEN", "SESSION_SECRET", "KEY_SECRET", "OIDC_CLIENT_SECRET"].filter((name) => !vars[name]);
	for (const name of secrets) vars[name] = randomBytes(32).toString("base64url"); // 43 chars
	const settings = Object.entries(OIDC_DEFAULTS).filter(([name]) => !vars[name]);
	for (const [name, value] of settings) vars[name] = value;
	const added = [...secrets, ...settings.map(([name]) => name)];
	if (added.length > 0) {
		const lines = added.map((name) => `${name}="${vars[name]}"`).join("\n");
		writeFileSync(path, `${text}${text && !text.endsWith("\n") ? "\n" : ""}${lines}\n`, { mode: 0o600 });
		console.log(`Wrote ${added.join(", ")} to ${path}.`);
	}
	return vars;
}

/** Fails early with a clear message instead of a confusing EADDRINUSE from a child process. */
function assertPortFree(port: number): Promise<void> {
	return new Promise((resolve, reject) => {
		const socket = connect(port, HOST);
		socket.once("connect", () => {
			socket.destroy();
			reject(new Error(`Port ${port} is already in use: is another 'npm start' running?`));
		});
		socket.once("error", () => resolve());
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

async function admin(token: string, method: string, path: string, body: unknown): Promise<Record<string, unknown>> {
	const response = await fetch(`${GATEWAY}/admin${path}`, {
		method,
		headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
		body: JSON.stringify(body),
	});
	const text = await response.text();
	if (!response.ok) throw new Error(`${method} /admin${path} failed: ${response.status} ${text}`);
	return JSON.parse(text) as Record<string, unknown>;
}

const vars = ensureDevVars();
const adminToken = vars.ADMIN_TOKEN ?? "";
await Promise.all([assertPortFree(GATEWAY_PORT), assertPortFree(UPSTREAM_PORT), assertPortFree(IDP_PORT)]).catch(
	(error: Error) => {
		console.error(`npm start failed: ${error.message}`);
		process.exit(1);
	},
);

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
			redirect_uris: [`${GATEWAY}/oauth/callback`, `http://localhost:${GATEWAY_PORT}/oauth/callback`],
		},
	],
});
console.log(`Local OpenID Connect provider listening at ${idp.issuer}`);

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
	// Who may sign in: people with a verified example.com address (alice; bob and carol are refused).
	await admin(adminToken, "PUT", "/access-rules/demo", {
		match: { emailDomain: "example.com" },
		servers: ["demo", "modern-demo"],
	});
	// A fresh key per run: keys are shown only once at creation, and the old ones stay valid.
	const created = await admin(adminToken, "POST", "/keys", { name: "local-dev" });
	const key = String(created.key);
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

 Try it with the MCP Inspector:
   npx @modelcontextprotocol/inspector
   then in the browser: Transport Type "Streamable HTTP", URL ${endpoint},
   header "Authorization: Bearer ${key}", and Connect.

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
