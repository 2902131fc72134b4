/**
 * Where a browser may be sent back to after a sign-in: a page of this
 * gateway, never another site. A `return` value comes from the request (a
 * link anyone can write), so it is resolved the way the browser will resolve
 * the `Location` it ends up in, against the gateway's origin, and kept only
 * when the result is one of the gateway's own pages on its own origin
 * (decision 0063).
 *
 * A pattern over the raw text cannot do this: browsers read `\` as `/` and
 * drop tabs and newlines inside a URL, so `/\evil.example` and
 * `/<tab>/evil.example` both become `//evil.example`, another host.
 */

/** The gateway's pages a return may name: these paths, or anything under a prefix ending in `/`. */
const OWN_PAGES = ["/", "/connections", "/approvals", "/connect/", "/admin/"] as const;

/**
 * A backslash, an ASCII control character or DEL percent-encoded (once or
 * twice over): nothing a page of the gateway is named with, and what a second
 * decoding may turn into a separator. Raw ones are found by `hasRawSuspect`.
 */
const ENCODED_SUSPECT = /%(?:25)*(?:5c|[01][0-9a-f]|7f)/i;

/**
 * The path (with query and fragment) to send a browser back to: `requested`
 * resolved against `origin` when it is a page of this gateway there, else
 * `fallback`. What is returned is the resolved form, never the raw text, so
 * the `Location` says exactly what was checked.
 *
 * @example
 * safeReturnPath("/connect/notes?link=x", "https://gw.example", "/connections") // "/connect/notes?link=x"
 * safeReturnPath("/\\evil.example/pwn", "https://gw.example", "/connections")   // "/connections"
 */
export function safeReturnPath(requested: string | null | undefined, origin: string, fallback: string): string {
	if (!requested?.startsWith("/") || hasRawSuspect(requested) || ENCODED_SUSPECT.test(requested)) return fallback;
	const resolved = URL.parse(requested, origin);
	if (!resolved || resolved.origin !== origin || !isOwnPage(resolved.pathname)) return fallback;
	return `${resolved.pathname}${resolved.search}${resolved.hash}`;
}

function isOwnPage(pathname: string): boolean {
	return OWN_PAGES.some((page) => (page.endsWith("/") && page !== "/" ? pathname.startsWith(page) : pathname === page));
}

/** A backslash, an ASCII control character (tab, newline, ...) or DEL: browsers read the first as `/` and drop the rest. */
function hasRawSuspect(value: string): boolean {
	for (let at = 0; at < value.length; at++) {
		const code = value.charCodeAt(at);
		if (code === 0x5c || code < 0x20 || code === 0x7f) return true;
	}
	return false;
}
