/**
 * A scripted browser for sign-in flows in tests: a cookie jar per host:port,
 * redirects followed by hand (so a flow can stop at a callback URL without
 * loading it), and HTML forms submitted by regex. Web APIs only, so it runs in
 * workerd as well as in Node.
 *
 * @example
 * const browser = new Browser((url) => (url.host === "gateway.test" ? workerFetch : undefined));
 * const login = await browser.get(authorizeUrl);
 * const done = await browser.submit(login, { fields: { login: "alice", password: "demo" } }, {
 *   stopAt: (url) => url.pathname === "/callback",
 * });
 * done.url.searchParams.get("code");
 */

/** What a navigation ended on. For a stop, `url` is the stop URL (not loaded), the rest is the redirect that led there. */
export interface Page {
	url: URL;
	status: number;
	html: string;
	headers: Headers;
}

export interface NavigateOptions {
	/** Ends the navigation, without loading it, at the first redirect whose target this accepts. */
	stopAt?: (url: URL) => boolean;
}

export interface FormSubmission {
	/** Picks the form whose action contains this; the page's first form when absent. */
	formAction?: string;
	/** Field values; they override the form's hidden inputs. */
	fields: Record<string, string>;
	/** The submit button pressed, when the server reads which one. */
	button?: { name: string; value: string };
}

type Fetch = typeof fetch;
interface StoredCookie {
	name: string;
	value: string;
	path: string;
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);
/** More hops than this is a redirect loop. */
const MAX_REDIRECTS = 20;

export class Browser {
	/** host:port → cookies, keyed by name and path. Domain, Secure and SameSite are ignored: tests run on http loopback. */
	readonly #jar = new Map<string, Map<string, StoredCookie>>();
	readonly #fetchers: (url: URL) => Fetch | undefined;

	/** `fetchers` picks the fetch for a URL (e.g. a Worker's handler for the gateway's host); undefined: global fetch. */
	constructor(fetchers: (url: URL) => Fetch | undefined = () => undefined) {
		this.#fetchers = fetchers;
	}

	get(url: string | URL, options: NavigateOptions = {}): Promise<Page> {
		return this.#navigate(new URL(url), "GET", undefined, options);
	}

	/** Fills in and submits a form of `page`, then follows redirects as `get` does. */
	submit(page: Page, submission: FormSubmission, options: NavigateOptions = {}): Promise<Page> {
		const forms = [...page.html.matchAll(/<form\b([^>]*)>([\s\S]*?)<\/form>/gi)].map((match) => ({
			attributes: attributesOf(match[1] ?? ""),
			body: match[2] ?? "",
		}));
		const form = forms.find((candidate) => (candidate.attributes.action ?? "").includes(submission.formAction ?? ""));
		if (!form) throw new Error(`no form with action containing "${submission.formAction ?? ""}" at ${page.url}`);
		const data = new URLSearchParams();
		for (const input of form.body.matchAll(/<input\b([^>]*)>/gi)) {
			const { type, name, value } = attributesOf(input[1] ?? "");
			if (type?.toLowerCase() === "hidden" && name) data.set(name, value ?? "");
		}
		for (const [name, value] of Object.entries(submission.fields)) data.set(name, value);
		if (submission.button) data.set(submission.button.name, submission.button.value);
		// An empty or missing action submits to the page itself.
		const action = new URL(form.attributes.action || page.url.href, page.url);
		if ((form.attributes.method ?? "get").toLowerCase() === "post")
			return this.#navigate(action, "POST", data, options);
		action.search = data.toString();
		return this.#navigate(action, "GET", undefined, options);
	}

	/** Where the link of `page` whose text contains `text` leads (not loaded: it may be a client's redirect URI). */
	link(page: Page, text: string): URL {
		for (const match of page.html.matchAll(/<a\b([^>]*)>([\s\S]*?)<\/a>/gi)) {
			const href = attributesOf(match[1] ?? "").href;
			if (href !== undefined && (match[2] ?? "").includes(text)) return new URL(href, page.url);
		}
		throw new Error(`no link with text containing "${text}" at ${page.url}`);
	}

	async #navigate(
		start: URL,
		method: string,
		body: URLSearchParams | undefined,
		options: NavigateOptions,
	): Promise<Page> {
		let url = start;
		for (let hop = 0; hop <= MAX_REDIRECTS; hop++) {
			const headers = new Headers({ accept: "text/html" });
			const cookie = this.#cookiesFor(url);
			if (cookie) headers.set("cookie", cookie);
			if (body) headers.set("content-type", "application/x-www-form-urlencoded");
			const doFetch = this.#fetchers(url) ?? fetch;
			const response = await doFetch(url.href, { method, headers, body: body?.toString(), redirect: "manual" });
			this.#store(url, response.headers);
			const location = response.headers.get("location");
			if (!REDIRECTS.has(response.status) || location === null) {
				return { url, status: response.status, html: await response.text(), headers: response.headers };
			}
			await response.body?.cancel();
			url = new URL(location, url);
			if (options.stopAt?.(url)) return { url, status: response.status, html: "", headers: response.headers };
			// 307 and 308 repeat the request as it was; the others turn it into a GET.
			if (response.status !== 307 && response.status !== 308) {
				method = "GET";
				body = undefined;
			}
		}
		throw new Error(`more than ${MAX_REDIRECTS} redirects from ${start}`);
	}

	#cookiesFor(url: URL): string {
		const cookies = [...(this.#jar.get(url.host)?.values() ?? [])];
		return cookies
			.filter(({ path }) => pathMatches(url.pathname, path))
			.map(({ name, value }) => `${name}=${value}`)
			.join("; ");
	}

	#store(url: URL, headers: Headers): void {
		for (const line of headers.getSetCookie()) {
			const [pair = "", ...attributeParts] = line.split(";");
			const separator = pair.indexOf("=");
			if (separator <= 0) continue; // Not a name=value cookie: a browser ignores it too.
			const name = pair.slice(0, separator).trim();
			const attributes = new Map(
				attributeParts.map((part) => {
					const [key = "", ...rest] = part.split("=");
					return [key.trim().toLowerCase(), rest.join("=").trim()] as const;
				}),
			);
			const path = attributes.get("path")?.startsWith("/") ? (attributes.get("path") ?? "/") : "/";
			const maxAge = attributes.get("max-age");
			const expires = attributes.get("expires");
			const expired =
				(maxAge !== undefined && Number(maxAge) <= 0) || (expires !== undefined && Date.parse(expires) <= Date.now());
			const cookies = this.#jar.get(url.host) ?? new Map<string, StoredCookie>();
			this.#jar.set(url.host, cookies);
			if (expired) cookies.delete(`${name};${path}`);
			else cookies.set(`${name};${path}`, { name, value: pair.slice(separator + 1).trim(), path });
		}
	}
}

/** RFC 6265 path-match: the cookie's path is the request path or a whole-segment prefix of it. */
function pathMatches(requestPath: string, cookiePath: string): boolean {
	if (requestPath === cookiePath) return true;
	return requestPath.startsWith(cookiePath) && (cookiePath.endsWith("/") || requestPath[cookiePath.length] === "/");
}

/** An HTML tag's attributes (names lowercased, values entity-decoded). */
function attributesOf(tag: string): Record<string, string | undefined> {
	const attributes: Record<string, string | undefined> = {};
	for (const match of tag.matchAll(/([a-zA-Z_:][-\w:.]*)\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>]+))/g)) {
		const [, name = "", double, single, bare] = match;
		attributes[name.toLowerCase()] = decodeEntities(double ?? single ?? bare ?? "");
	}
	return attributes;
}

const NAMED_ENTITIES: Record<string, string> = { amp: "&", quot: '"', apos: "'", lt: "<", gt: ">" };

function decodeEntities(text: string): string {
	return text.replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (entity, body: string) => {
		if (body.startsWith("#x") || body.startsWith("#X")) return String.fromCodePoint(Number.parseInt(body.slice(2), 16));
		if (body.startsWith("#")) return String.fromCodePoint(Number(body.slice(1)));
		return NAMED_ENTITIES[body.toLowerCase()] ?? entity;
	});
}
