import type { ConsentDescription } from "@cloudflare/workers-oauth-provider";

/** Everything shown on a page that came from a client (its name, its URIs) is escaped: an attacker chooses it. */
export function escapeHtml(value: string): string {
	return value.replace(/[&<>"']/g, (char) => `&#${char.charCodeAt(0)};`);
}

const STYLE =
	"body{font:16px/1.5 system-ui,sans-serif;max-width:34rem;margin:2rem auto;padding:0 1rem;color:#1b1b1b}h1{font-size:1.5rem;line-height:1.3;margin:0 0 1rem;overflow-wrap:anywhere}button{font:inherit;padding:.4rem 1rem;margin-right:.5rem}.warn{background:#fff4d6;padding:.5rem .75rem}table{border-collapse:collapse;width:100%}th,td{text-align:left;padding:.5rem .25rem;border-bottom:1px solid #ddd}td form{margin:0}.ok{color:#176c2b}.off{color:#8a4b00}";

/**
 * A whole page: one small stylesheet, the title escaped; `body` is HTML the caller escaped.
 * `ownStyle`: rules of one page family (the dashboard's), appended after the shared ones.
 */
export function page(title: string, body: string, ownStyle = ""): string {
	return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width"><title>${escapeHtml(title)}</title><style>${STYLE}${ownStyle}</style></head><body>${body}</body></html>`;
}

/**
 * The consent page: which client asks, where its access will go, and that
 * the gateway at `host` is what it will reach. A self-registered client's
 * name is marked as unverified; a Client ID Metadata Document's domain is shown.
 */
export function consentPage(details: ConsentDescription, handle: string, host: string): string {
	const name = escapeHtml(details.clientName);
	const origin = details.clientDomain
		? `Published by <strong>${escapeHtml(details.clientDomain)}</strong>.`
		: "This app registered itself; its name is not verified.";
	const loopback = details.redirectIsLoopback
		? '<p class="warn"><strong>This sends access to an app on your computer.</strong> Continue only if you just started signing in from it.</p>'
		: "";
	return page(
		`Allow ${details.clientName}?`,
		`<h1>Allow <em>${name}</em> to use the MCP gateway at ${escapeHtml(host)}?</h1>
<p>${origin} Access will be sent to <strong>${escapeHtml(details.redirectHost)}</strong>.</p>
${loopback}
<p>You will sign in with your organisation's identity provider next. The app will reach the MCP servers your organisation's access rules grant you, as you.</p>
<form method="post">
<input type="hidden" name="handle" value="${escapeHtml(handle)}">
<p><button name="decision" value="approve">Allow</button><button name="decision" value="deny">Deny</button></p>
</form>`,
	);
}

/** A page as a response that is never cached or framed; `headers` adds the flow's own (its cookies). */
export function pageResponse(status: number, html: string, headers?: Headers): Response {
	const response = new Response(html, {
		status,
		headers: {
			"content-type": "text/html; charset=utf-8",
			"cache-control": "no-store",
			"content-security-policy": "frame-ancestors 'none'",
			"x-frame-options": "DENY",
		},
	});
	for (const [name, value] of headers ?? []) {
		if (name !== "location") response.headers.append(name, value);
	}
	return response;
}

/** A sign-in that cannot go back to the client (no validated redirect): said here, never redirected. */
export function errorPage(status: number, message: string): Response {
	return pageResponse(
		status,
		page(
			"Sign-in failed",
			`<h1>This sign-in cannot continue</h1><p>${escapeHtml(message)}</p><p>Start again from your MCP client.</p>`,
		),
	);
}

/**
 * A person signed in, and no access rule admits them: the gateway says so
 * itself, with the reason's kind (`reason`, a clause about "it", the
 * account), rather than leaving it to whatever the client makes of
 * `error_description`; the link takes the `access_denied` answer back to the
 * client. 403, with the sign-in's own `headers`.
 */
export function refusalPage(reason: string, host: string, backToClient: string, headers: Headers): Response {
	return pageResponse(
		403,
		page(
			"Access denied",
			`<h1>Your account may not use this gateway</h1>
<p>You signed in, but your account may not use the MCP gateway at ${escapeHtml(host)}: ${escapeHtml(reason)}.</p>
<p>Ask the operator of this gateway for access.</p>
<p><a href="${escapeHtml(backToClient)}">Return to the app</a> (it will be told that access was denied).</p>`,
		),
		headers,
	);
}
