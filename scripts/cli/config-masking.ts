/**
 * What the admin API masks of a server (src/edge/admin-views.ts), as the
 * config commands must know it: a URL's query values, and every header or
 * credential value that is more than `${UPSTREAM_…}` references after at most
 * an auth scheme. Such a value can be neither compared by plan nor exported,
 * so a file should hold a reference instead.
 */
import { maskedUrl } from "../../src/upstream/upstream-target.ts";

/** One `${UPSTREAM_…}` reference. */
export const REFERENCE = /\$\{UPSTREAM_[A-Z0-9_]+\}/g;
/** What a value left after its references looks like when it is an auth scheme only ("Bearer "). */
export const SCHEME_ONLY = /^(?:[A-Za-z][A-Za-z0-9-]* )?$/;

/** A value the admin API shows as written: references after at most an auth scheme. */
export function isReferencesOnly(value: string): boolean {
	return value.includes("${UPSTREAM_") && SCHEME_ONLY.test(value.replace(REFERENCE, ""));
}

/** How to turn a literal secret of `server` into a reference: the secret to put, and where. */
export function referenceFix(server: string, part: string): string {
	const suggested = `UPSTREAM_${server.toUpperCase().replaceAll("-", "_")}_${part.toUpperCase().replace(/[^A-Z0-9]+/g, "_")}`;
	return `put the secret in a Worker secret (npx wrangler secret put ${suggested}) and write \${${suggested}} in its place`;
}

/** A URL as the admin API shows it (query values masked), to compare a file's URL with it. */
export function comparableUrl(url: string): string {
	return URL.canParse(url) ? maskedUrl(url) : url;
}
