import { escapeHtml, page, pageResponse } from "../auth/pages.ts";

/** One server as the connections page lists it. */
export interface ConnectionRow {
	server: string;
	state: "connected" | "disconnected" | "not connected";
	connectedAt: number | null;
}

/** A page with a heading and a sentence (escaped), and an optional link back to the connections page. */
export function messagePage(status: number, title: string, sentence: string, back = true, headers?: Headers): Response {
	const link = back ? '<p><a href="/connections">Your connections</a></p>' : "";
	return pageResponse(
		status,
		page(title, `<p class="brand">MCP gateway</p><h1>${escapeHtml(title)}</h1><p>${escapeHtml(sentence)}</p>${link}`),
		headers,
	);
}

/** The person must sign in to the gateway first: a link that comes back here. */
export function signInFirstPage(signInHref: string, why: string): Response {
	return pageResponse(
		401,
		page(
			"Sign in to continue",
			`<p class="brand">MCP gateway</p><h1>Sign in to continue</h1><p>${escapeHtml(why)}</p><div class="actions"><a class="button primary" href="${escapeHtml(signInHref)}">Sign in</a></div>`,
		),
	);
}

/**
 * `/connections`: the servers the person's rules grant that take each
 * person's own account, whether each is connected, and a button for each.
 * The forms post back to this origin only (checked there); their cookie is SameSite=Lax.
 */
export function connectionsPage(who: string, rows: readonly ConnectionRow[]): Response {
	const list =
		rows.length === 0
			? "<p>None of the servers you may use needs an account of your own.</p>"
			: `<table><thead><tr><th>Server</th><th>Status</th><th></th></tr></thead><tbody>${rows.map(row).join("")}</tbody></table>`;
	return pageResponse(
		200,
		page(
			"Your connections",
			`<p class="brand">MCP gateway</p><h1>Your connections</h1><p>Signed in as <strong>${escapeHtml(who)}</strong>. These servers act as you with your own account there; connect each once, from here or when a client asks.</p>${list}`,
		),
	);
}

function row(connection: ConnectionRow): string {
	const server = escapeHtml(connection.server);
	const at = connection.connectedAt === null ? null : new Date(connection.connectedAt).toISOString();
	const since = at === null ? "" : ` since <time datetime="${escapeHtml(at)}">${escapeHtml(at.slice(0, 10))}</time>`;
	const status =
		connection.state === "connected"
			? `<span class="ok">Connected${since}</span>`
			: connection.state === "disconnected"
				? '<span class="off">Disconnected: connect again</span>'
				: "Not connected";
	const action = connection.state === "connected" ? "disconnect" : "connect";
	const label = connection.state === "connected" ? "Disconnect" : "Connect";
	return `<tr><td class="nowrap">${server}</td><td>${status}</td><td><form method="post" action="/connections/${action}"><input type="hidden" name="server" value="${server}"><button>${label}</button></form></td></tr>`;
}
