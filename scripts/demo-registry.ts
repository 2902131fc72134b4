/**
 * The servers and access rules of the local demo (`npm start`), as admin API
 * calls: the four demo servers, `files` (reached through a connector), when its
 * document is given, `rest-demo` (made from a REST API's OpenAPI document), when its address is
 * given, `system-monitor` (an MCP App), `demo-operator` (dave: the servers and the
 * dashboard) and `demo` (verified example.com addresses: alice; bob and carol
 * are refused). The page tests register the same through `registerDemo`, so
 * the flows they drive in a browser are the ones a person meets after
 * `npm start`: dave into the dashboard, alice connecting `oauth-demo` at `/connections`.
 */

/** Where each demo server listens (each a fixture of scripts/fixtures/). */
export interface DemoUpstreams {
	/** The demo MCP server (upstream-server.ts). */
	demo: string;
	/** The server that speaks only MCP 2026-07-28 (modern-upstream.ts). */
	modernDemo: string;
	/** The server that takes each person's own OAuth token (oauth-upstream.ts). */
	oauthDemo: string;
	/** The server that verifies the gateway's identity assertion (identity-upstream.ts). */
	whoamiDemo: string;
	/** The demo REST API's OpenAPI document (rest-demo.ts); absent: `rest-demo` is not registered. */
	restDemoDocument?: string;
	/** The MCP Apps system monitor example (app-servers.ts); absent: `system-monitor` is not registered. */
	systemMonitor?: string;
}

/** One admin API call: `/admin<path>` with a JSON body. */
export type AdminCall = (method: "PUT", path: string, body: unknown) => Promise<unknown>;

/** The servers the demo's people may use, in both rules. */
export const DEMO_SERVERS = ["demo", "modern-demo", "oauth-demo", "whoami-demo", "files"] as const;

/** Registers the demo's servers, then its rules. PUT is idempotent: a later run updates what an earlier one stored. */
export async function registerDemo(admin: AdminCall, upstreams: DemoUpstreams): Promise<void> {
	const servers: string[] = [...DEMO_SERVERS];
	await admin("PUT", "/servers/demo", { url: upstreams.demo });
	await admin("PUT", "/servers/modern-demo", { url: upstreams.modernDemo });
	// Each caller's own account at the upstream's authorization server, connected once through a link.
	await admin("PUT", "/servers/oauth-demo", { url: upstreams.oauthDemo, auth: { type: "oauth" } });
	// Each request carries an assertion of who is calling, signed by the gateway (IDENTITY_SIGNING_KEY).
	await admin("PUT", "/servers/whoami-demo", { url: upstreams.whoamiDemo, auth: { type: "identity" } });
	// No address: reached through whichever connectors (`mcpgw connect`) dial in for it (npm start runs one).
	await admin("PUT", "/servers/files?check=false", { connector: {} });
	if (upstreams.restDemoDocument !== undefined) {
		// A REST API, not an MCP server: the gateway reads its OpenAPI document and answers each operation as a tool.
		await admin("PUT", "/servers/rest-demo", { openapi: { url: upstreams.restDemoDocument } });
		servers.push("rest-demo");
	}
	if (upstreams.systemMonitor !== undefined) {
		// An MCP App: its tool points at a View (ui://system-monitor/mcp-app.html) that polls an app-only tool.
		await admin("PUT", "/servers/system-monitor", { url: upstreams.systemMonitor });
		servers.push("system-monitor");
	}
	// The operator: dave signs in to the dashboard at /admin/ (the first matching rule decides, so his comes first),
	// and decides the calls an approve policy holds at /approvals.
	await admin("PUT", "/access-rules/demo-operator", {
		match: { subject: "dave" },
		servers,
		admin: true,
		approver: true,
		priority: 0,
	});
	// Who may sign in: people with a verified example.com address (alice; bob and carol are refused).
	await admin("PUT", "/access-rules/demo", { match: { emailDomain: "example.com" }, servers });
}
