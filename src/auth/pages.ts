import type { ConsentDescription } from "@cloudflare/workers-oauth-provider";

/** Everything shown on a page that came from a client (its name, its URIs) is escaped: an attacker chooses it. */
export function escapeHtml(value: string): string {
	return value.replace(/[&<>"']/g, (char) => `&#${char.charCodeAt(0)};`);
}

/**
 * The one stylesheet of every page the gateway shows (consent, refusals,
 * errors, `/`, `/connections`, `/admin/docs`; the dashboard appends its own
 * rules after it), and of the demo identity provider's login. Light and dark
 * follow the browser (`prefers-color-scheme`); every colour pair reads at
 * WCAG AA (4.5:1) in both, text is at least 14 px, and nothing is wider than
 * a 375 px phone. One primary action per page: `button.primary`.
 */
export const PAGE_STYLE = [
	":root{color-scheme:light dark;--bg:#fff;--fg:#1b1b1b;--muted:#4f5561;--line:#d3d6db;--panel:#f3f4f6;--accent:#1f4ea3;--on-accent:#fff;--warn-bg:#fff3cd;--warn-fg:#4a3500;--ok:#176c2b;--off:#8a4b00;--bad:#a11d1d}",
	"@media (prefers-color-scheme:dark){:root{--bg:#15171c;--fg:#e9eaec;--muted:#b3b8c2;--line:#3b404a;--panel:#1f232a;--accent:#8db6ff;--on-accent:#0b1730;--warn-bg:#3b3114;--warn-fg:#ffe7a6;--ok:#7fd694;--off:#f2b872;--bad:#ff9e9e}}",
	"*{box-sizing:border-box}html{background:var(--bg)}",
	"body{font:16px/1.5 system-ui,-apple-system,'Segoe UI',sans-serif;max-width:36rem;margin:0 auto;padding:2rem 1rem 3rem;color:var(--fg);background:var(--bg)}",
	"body.wide{max-width:60rem}",
	"h1{font-size:1.5rem;line-height:1.3;margin:0 0 1rem;overflow-wrap:anywhere}h2{font-size:1.15rem;margin:2rem 0 .5rem}h3{font-size:1rem;margin:0}h4{font-size:.9rem;margin:.75rem 0 .25rem}",
	"p,li,dd,h2,h3,h4{overflow-wrap:anywhere}ul{padding-left:1.25rem}a{color:var(--accent)}small,.muted{color:var(--muted)}",
	"code{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:max(.9em,14px);overflow-wrap:anywhere}",
	".brand{font-size:.9rem;font-weight:600;color:var(--muted);margin:0 0 1.25rem}",
	".card,section{background:var(--panel);border:1px solid var(--line);border-radius:8px;padding:.75rem 1rem;margin:1rem 0}.card>:first-child{margin-top:0}.card>:last-child{margin-bottom:0}",
	".warn{background:var(--warn-bg);color:var(--warn-fg);border-radius:6px;padding:.5rem .75rem}.warn strong{color:inherit}",
	".actions{display:flex;flex-wrap:wrap;gap:.75rem;margin:1.5rem 0 0}",
	"button,.button{font:inherit;min-height:2.75rem;padding:.5rem 1.25rem;border-radius:6px;border:1px solid var(--line);background:var(--panel);color:var(--fg);cursor:pointer;text-decoration:none;display:inline-block}",
	"button.primary,.button.primary{background:var(--accent);border-color:var(--accent);color:var(--on-accent);font-weight:600}",
	"button:focus-visible,a:focus-visible,input:focus-visible{outline:3px solid var(--accent);outline-offset:2px}",
	"label{display:block;margin:.75rem 0}input{font:inherit;display:block;width:100%;margin-top:.25rem;padding:.5rem;border:1px solid var(--line);border-radius:6px;background:var(--bg);color:var(--fg)}",
	"table{border-collapse:collapse;width:100%}th,td{text-align:left;vertical-align:baseline;padding:.5rem .25rem;border-bottom:1px solid var(--line)}td form{margin:0}.scroll{overflow-x:auto;max-width:100%}",
	// A button's word, a date and a name in a table stay on one line, however narrow the column.
	"td button,td time,.nowrap{white-space:nowrap}",
	".ok{color:var(--ok)}.off{color:var(--off)}.bad{color:var(--bad)}",
	// The admin API's reference (/admin/docs): a method label before each path.
	"section h3{font-family:ui-monospace,SFMono-Regular,Menlo,monospace}section p{margin:.25rem 0}td code{overflow-wrap:normal}",
	".m{display:inline-block;min-width:4.2rem;font-weight:700}.get{color:var(--ok)}.put,.post{color:var(--accent)}.delete{color:var(--bad)}",
].join("");

/** What a page may ask of its frame: `wide` for reference pages and tables that need the room. */
export interface PageOptions {
	wide?: boolean;
	/** Rules of one page family (the dashboard's), appended after the shared ones. */
	ownStyle?: string;
}

/** A whole page: the shared stylesheet, the title escaped; `body` is HTML the caller escaped. */
export function page(title: string, body: string, options: PageOptions = {}): string {
	const bodyTag = options.wide ? '<body class="wide">' : "<body>";
	return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1"><meta name="color-scheme" content="light dark"><title>${escapeHtml(title)}</title><style>${PAGE_STYLE}${options.ownStyle ?? ""}</style></head>${bodyTag}${body}</body></html>`;
}

/** Who signed in, as the consent page names them: a display name when the provider gave one, and the address or subject. */
export interface ConsentPerson {
	name: string | null;
	/** The verified address, or the subject when there is none. */
	account: string;
}

/**
 * What the person will reach: the servers their access rule names, or every
 * server when it names none (`all`).
 */
export interface ConsentServers {
	all: boolean;
	names: readonly string[];
}

/**
 * The consent page, shown once the person signed in and an access rule
 * admits them: which client asks, who they are, which servers of the gateway
 * at `host` the client will reach as them, and where the access goes. A
 * self-registered client's name is marked as unverified; a Client ID
 * Metadata Document's domain is shown; a loopback redirect is warned about.
 * One primary button, Allow; Deny beside it.
 */
export function consentPage(
	details: ConsentDescription,
	handle: string,
	host: string,
	person: ConsentPerson,
	servers: ConsentServers,
): string {
	const name = escapeHtml(details.clientName);
	const origin = details.clientDomain
		? `Published by <strong>${escapeHtml(details.clientDomain)}</strong>.`
		: "This app registered itself; its name is not verified.";
	const loopback = details.redirectIsLoopback
		? '<p class="warn"><strong>This sends access to an app on your computer.</strong> Continue only if you just started signing in from it.</p>'
		: "";
	const who = person.name
		? `<strong>${escapeHtml(person.name)}</strong> (${escapeHtml(person.account)})`
		: `<strong>${escapeHtml(person.account)}</strong>`;
	return page(
		`Allow ${details.clientName}?`,
		`<p class="brand">MCP gateway · ${escapeHtml(host)}</p>
<h1>Allow <em>${name}</em> to use the MCP gateway at ${escapeHtml(host)}?</h1>
<div class="card"><p>Signed in as ${who}.</p>
<p>${serversSentence(servers)}</p>${serverList(servers)}</div>
<p>${origin} Access will be sent to <strong>${escapeHtml(details.redirectHost)}</strong>.</p>
${loopback}
<form method="post" action="/authorize">
<input type="hidden" name="handle" value="${escapeHtml(handle)}">
<div class="actions"><button class="primary" name="decision" value="approve">Allow</button><button name="decision" value="deny">Deny</button></div>
</form>`,
	);
}

function serversSentence(servers: ConsentServers): string {
	if (servers.names.length === 0) {
		return servers.all
			? "Your access lets it reach every server of this gateway, as you; there is none yet."
			: "Your access names no server of this gateway yet: it will reach nothing until the operator grants one.";
	}
	const count = servers.names.length === 1 ? "this server" : `these ${servers.names.length} servers`;
	return servers.all
		? `It will reach every server of this gateway as you, today ${count}:`
		: `It will reach ${count} as you:`;
}

function serverList(servers: ConsentServers): string {
	if (servers.names.length === 0) return "";
	return `<ul>${servers.names.map((name) => `<li><code>${escapeHtml(name)}</code></li>`).join("")}</ul>`;
}

/**
 * A page as a response that is never cached or framed; `headers` adds the
 * flow's own (its cookies appended, anything else set over these).
 */
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
		if (name === "set-cookie") response.headers.append(name, value);
		else if (name !== "location" && name !== "content-type") response.headers.set(name, value);
	}
	return response;
}

/** A sign-in that cannot go back to the client (no validated redirect): said here, never redirected. */
export function errorPage(status: number, message: string, headers?: Headers): Response {
	return pageResponse(
		status,
		page(
			"Sign-in failed",
			`<p class="brand">MCP gateway</p><h1>This sign-in cannot continue</h1><p>${escapeHtml(message)}</p><p class="muted">Start again from your MCP client.</p>`,
		),
		headers,
	);
}

/**
 * A person signed in, and no access rule admits them: the gateway says so
 * itself, with the reason's kind (`reason`, a clause about "it", the
 * account), rather than leaving it to whatever the client makes of
 * `error_description`; the link takes the `access_denied` answer back to the
 * client. 403, with the sign-in's own `headers`. No consent is asked.
 */
export function refusalPage(reason: string, host: string, backToClient: string, headers: Headers): Response {
	return pageResponse(
		403,
		page(
			"Access denied",
			`<p class="brand">MCP gateway · ${escapeHtml(host)}</p>
<h1>Your account may not use this gateway</h1>
<p>You signed in, but your account may not use the MCP gateway at ${escapeHtml(host)}: ${escapeHtml(reason)}.</p>
<p>Ask the operator of this gateway for access.</p>
<div class="actions"><a class="button primary" href="${escapeHtml(backToClient)}">Return to the app</a></div>
<p class="muted">The app will be told that access was denied.</p>`,
		),
		headers,
	);
}
