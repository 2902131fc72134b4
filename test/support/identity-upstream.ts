import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CfWorkerJsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/cfworker";
import { inject } from "vitest";
import type { IdentityLogEntry, IdentityWhoami } from "../../scripts/fixtures/control-shapes.ts";

let tenants = 0;

/** A tenant of the identity upstream (scripts/fixtures/identity-upstream.ts) of a test's own: its keys, expectations, log. */
export function identityTenant(label: string): { base: string; mcpUrl: string } {
	tenants += 1;
	const base = `http://127.0.0.1:${inject("identityPort")}/t/${label}-${tenants}-${Math.random().toString(36).slice(2, 7)}`;
	return { base, mcpUrl: `${base}/mcp` };
}

async function control(base: string, route: string, body: unknown): Promise<void> {
	const response = await fetch(`${base}${route}`, {
		method: "POST",
		headers: { "content-type": "application/json" },
		body: JSON.stringify(body),
	});
	if (response.status !== 204)
		throw new Error(`identity upstream ${route}: ${response.status} ${await response.text()}`);
}

/** The tenant verifies tokens against these keys from now on. */
export function postJwks(base: string, jwks: unknown): Promise<void> {
	return control(base, "/_control/jwks", jwks);
}

/** What the tenant expects of a token: its issuer, its audience (default: the tenant's MCP URL), or a JWKS URL to verify against. */
export function configureIdentity(
	base: string,
	settings: { issuer?: string | null; audience?: string | null; jwksUrl?: string },
): Promise<void> {
	return control(base, "/_control/configure", settings);
}

/** `whoami` describes itself so from now on (open sessions are told its list changed). */
export function describeWhoami(base: string, description: string): Promise<void> {
	return control(base, "/_control/describe", { description });
}

export async function identityLog(base: string): Promise<IdentityLogEntry[]> {
	return (await (await fetch(`${base}/_log`)).json()) as IdentityLogEntry[];
}

/** Connects an SDK client to the tenant with `token` as its bearer and asks `whoami`. */
export async function whoamiWith(mcpUrl: string, token: string): Promise<{ text: string; claims: IdentityWhoami }> {
	const client = new Client(
		{ name: "identity-test", version: "1.0.0" },
		{ jsonSchemaValidator: new CfWorkerJsonSchemaValidator() },
	);
	await client.connect(
		new StreamableHTTPClientTransport(new URL(mcpUrl), {
			requestInit: { headers: { authorization: `Bearer ${token}` } },
		}),
	);
	try {
		const result = await client.callTool({ name: "whoami", arguments: {} });
		const [first] = result.content as Array<{ type: string; text?: string }>;
		return { text: first?.text ?? "", claims: result.structuredContent as unknown as IdentityWhoami };
	} finally {
		await client.close();
	}
}

/** The HTTP status the tenant answers an `initialize` carrying `token`. */
export async function initializeStatus(mcpUrl: string, token: string): Promise<number> {
	const response = await fetch(mcpUrl, {
		method: "POST",
		headers: {
			authorization: `Bearer ${token}`,
			accept: "application/json, text/event-stream",
			"content-type": "application/json",
		},
		body: JSON.stringify({
			jsonrpc: "2.0",
			id: 1,
			method: "initialize",
			params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } },
		}),
	});
	await response.body?.cancel();
	return response.status;
}
