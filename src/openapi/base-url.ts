import type { DocumentProblem } from "./document-load.ts";
import type { DocumentServer } from "./document-shape.ts";

/**
 * The absolute http(s) URL each operation's path is appended to, without a
 * trailing slash: the operator's `baseUrl`, else the document's first server
 * (its variables at their defaults; no `servers` means `/`, 3.1 §4.8.1),
 * resolved against the URL the document was fetched from.
 */
export function baseUrlOf(
	servers: readonly DocumentServer[] | undefined,
	options: { documentUrl: string | null; baseUrl: string | null },
): string | DocumentProblem {
	const first = servers?.[0];
	const stated = options.baseUrl ?? (first === undefined ? "/" : withDefaults(first));
	const what =
		options.baseUrl !== null
			? `The baseUrl ${JSON.stringify(stated)}`
			: `The document's server URL ${JSON.stringify(stated)}`;
	const where = options.baseUrl === null && first !== undefined ? { where: "/servers/0/url" } : {};
	let url: URL;
	try {
		url = new URL(stated, options.documentUrl ?? undefined);
	} catch (error) {
		if (!(error instanceof TypeError)) throw error;
		const why =
			options.documentUrl === null ? "is not an absolute URL, and the document was given inline" : "is not a URL";
		return { problem: `${what} ${why}: give openapi.baseUrl, the API's absolute http(s) address.`, ...where };
	}
	if (url.protocol !== "https:" && url.protocol !== "http:") {
		return {
			problem: `${what} is not an http(s) URL: give openapi.baseUrl, the API's absolute http(s) address.`,
			...where,
		};
	}
	if (url.search !== "" || url.hash !== "" || url.username !== "" || url.password !== "") {
		return {
			problem: `${what} has a query, fragment or credentials; give openapi.baseUrl without them (credentials go in openapi.credentials).`,
			...where,
		};
	}
	return `${url.origin}${url.pathname.replace(/\/+$/, "")}`;
}

/** A server's URL with each `{variable}` replaced by its default. */
function withDefaults(server: DocumentServer): string {
	return server.url.replace(/\{([^}]+)\}/g, (whole, name: string) => server.variables?.[name]?.default ?? whole);
}
