import { escapeHtml, page, pageResponse } from "../auth/pages.ts";

/**
 * `/` for a person at a browser: what this is, the endpoint to give an MCP
 * client, and where to go next. Only what the gateway's own configuration
 * decides (whether it signs people in) changes what it lists; nothing of the
 * registry is read or shown, since anyone may load it.
 */
export function homePage(origin: string, signsPeopleIn: boolean): Response {
	const endpoint = escapeHtml(`${origin}/mcp`);
	const connections = signsPeopleIn
		? '<li><a href="/connections">Your connections</a>: sign in, and connect your own accounts at the servers that act as you.</li>'
		: "";
	const access = signsPeopleIn
		? "Clients sign you in through your organisation's identity provider, or send an API key the operator gave you."
		: "Clients send an API key the operator gave you (<code>Authorization: Bearer …</code>).";
	return pageResponse(
		200,
		page(
			"MCP gateway",
			`<p class="brand">MCP gateway · ${escapeHtml(new URL(origin).host)}</p>
<h1>This is an MCP gateway</h1>
<p>It gives MCP clients one authenticated endpoint for many MCP servers, and decides which tools each caller may see and call.</p>
<div class="card"><p>Point your MCP client (streamable HTTP) at</p><p><code>${endpoint}</code></p>
<p class="muted">That is every server you may use, as one; <code>${endpoint}/&lt;server&gt;</code> is one server alone.</p></div>
<p>${access}</p>
<h2>Where to go</h2>
<ul>
${connections}<li><a href="/admin/">Dashboard</a>: for the operators of this gateway.</li>
<li><a href="/admin/docs">Admin API reference</a> and its <a href="/admin/openapi.json">OpenAPI document</a> (open to the dashboard's operators once signed in there, or with the admin token).</li>
</ul>`,
		),
	);
}
