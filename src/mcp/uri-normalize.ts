import { GatewayError } from "./gateway-error.ts";
import { MAX_URI_LENGTH } from "./uri-template-match.ts";

/**
 * RFC 3986 §6.2.2 syntax-based normalisation of resource URIs, so that the
 * gateway decides on a URI as an upstream will read it: `DEMO://demo/x/../readme`
 * is `demo://demo/readme` to an SDK server (it parses URIs with WHATWG `URL`),
 * and must be to the operator's `resources` globs too.
 *
 * - the scheme and the host are lower-cased (§6.2.2.1);
 * - percent-encoded unreserved characters are decoded, other percent-encodings
 *   get upper-case hex digits (§6.2.2.1, §6.2.2.2);
 * - `.` and `..` segments are removed from the path (§5.2.4, §6.2.2.3), whatever
 *   the scheme: `demo://` is no less hierarchical to the servers that use it;
 * - an empty port is dropped, and so is the default port of http, https, ws,
 *   wss and ftp, whose empty path becomes `/` (§6.2.3; these are the schemes
 *   whose URL parsers do so);
 * - characters outside RFC 3986 are percent-encoded as UTF-8, as an IRI is mapped
 *   to a URI (RFC 3987 §3.1) and as URL parsers do: `a b` and `a%20b` are one URI.
 *
 * What it cannot normalise is refused: no scheme, a `%` without two hex digits,
 * a control character, a backslash (URL parsers read it as `/` in http and file
 * URLs, RFC 3986 does not), a lone surrogate, non-ASCII in the host (IDNA is not
 * done here), or more than MAX_URI_LENGTH characters. The query and the
 * fragment are normalised only as to percent-encoding.
 */

/**
 * What is normalised: a URI; a URI template (RFC 6570), whose `{...}`
 * expressions are kept as written; or an operator's glob, whose `*`, `?` and
 * `{...}` (a template named by its text) are.
 */
export type UriForm = "uri" | "template" | "glob";

/** The normal form, or why there is none (a clause: "has no scheme"). */
export type Normalized = { normal: string } | { refused: string };

type Token =
	/** One ASCII character as written, or an unreserved one decoded from `%XX` (`decoded`). */
	| { kind: "char"; char: string; decoded: boolean }
	/** A percent-encoded octet, upper-case hex: never a delimiter. `wide`: it encodes part of a non-ASCII character. */
	| { kind: "encoded"; text: string; wide: boolean }
	/** A glob wildcard or a template expression, kept as written: never a delimiter, never a dot segment. */
	| { kind: "hole"; text: string };

const UNRESERVED = /^[A-Za-z0-9\-._~]$/;
const SCHEME_CHAR = /^[A-Za-z0-9+.-]$/;
const HEX_PAIR = /^[0-9A-Fa-f]{2}$/;
const UTF8 = new TextEncoder();
/** ASCII outside RFC 3986 that URL parsers percent-encode rather than refuse. */
const ENCODED_WHEN_WRITTEN = new Set([" ", '"', "<", ">", "^", "`", "{", "|", "}"]);
/** Ports that are the scheme's own, dropped as URL parsers drop them. */
const DEFAULT_PORTS: Readonly<Record<string, string>> = { http: "80", https: "443", ws: "80", wss: "443", ftp: "21" };

/**
 * The RFC 3986 normal form of `value` (see above), or why it has none.
 *
 * @example
 * normalizeUri("DEMO://demo/a/../notes/%31"); // { normal: "demo://demo/notes/1" }
 * normalizeUri("demo://demo/notes/*", "glob"); // { normal: "demo://demo/notes/*" }
 */
export function normalizeUri(value: string, form: UriForm = "uri"): Normalized {
	if (value.length > MAX_URI_LENGTH) return { refused: `is longer than ${MAX_URI_LENGTH} characters` };
	const tokens = tokenize(value, form);
	if ("refused" in tokens) return tokens;
	const scheme = schemeEnd(tokens, form);
	// Only a URI must be absolute; a glob such as `*/readme` or a relative template is normalised as to percent-encoding.
	if (scheme < 0) return form === "uri" ? { refused: NO_SCHEME } : { normal: joined(tokens) };
	const schemeTokens = tokens.slice(0, scheme);
	const schemeText = joined(schemeTokens, true);
	const literalScheme = schemeTokens.every((token) => token.kind === "char") ? schemeText : null;
	let at = scheme + 1;
	let authority: string | null = null;
	if (isChar(tokens[at], "/") && isChar(tokens[at + 1], "/")) {
		const end = indexOfChar(tokens, "/?#", at + 2);
		const normal = normalAuthority(tokens.slice(at + 2, end), literalScheme);
		if ("refused" in normal) return normal;
		authority = normal.normal;
		at = end;
	}
	const pathEnd = indexOfChar(tokens, "?#", at);
	let path = normalPath(tokens.slice(at, pathEnd));
	if (authority !== null && path === "" && literalScheme !== null && literalScheme in DEFAULT_PORTS) path = "/";
	// Without an authority a path may not start with `//` (it would read as one): RFC 3986 §5.2.4's note.
	if (authority === null && path.startsWith("//")) path = `/.${path}`;
	const rest = joined(tokens.slice(pathEnd));
	return { normal: `${schemeText}:${authority === null ? "" : `//${authority}`}${path}${rest}` };
}

const NO_SCHEME = 'has no scheme (such as "https:" or "file:"), so it is not an absolute URI';

/**
 * A request's resource URI the gateway cannot normalise, refused before
 * anything is sent: it cannot be compared with what the endpoint offers.
 */
export function unnormalizableUri(uri: string, refused: string): GatewayError {
	const shown = uri.length > 200 ? `${uri.slice(0, 200)}…` : uri;
	return new GatewayError(
		"invalid_params",
		`Invalid params: the resource URI ${JSON.stringify(shown)} ${refused}; the gateway cannot compare it with the resources this endpoint offers.`,
	);
}

function tokenize(value: string, form: UriForm): Token[] | { refused: string } {
	const tokens: Token[] = [];
	let i = 0;
	while (i < value.length) {
		const char = value.charAt(i);
		const code = value.charCodeAt(i);
		if (form !== "uri" && char === "{") {
			const close = value.indexOf("}", i);
			if (close >= 0) {
				tokens.push({ kind: "hole", text: value.slice(i, close + 1) });
				i = close + 1;
				continue;
			}
			if (form === "template") return { refused: 'has a "{" that no "}" closes' };
		}
		if (form === "glob" && (char === "*" || char === "?")) {
			tokens.push({ kind: "hole", text: char });
			i++;
			continue;
		}
		if (code < 0x20 || code === 0x7f) return { refused: "contains a control character" };
		if (char === "\\") return { refused: 'contains a backslash, which some servers read as "/"' };
		if (char === "%") {
			const hex = value.slice(i + 1, i + 3);
			if (!HEX_PAIR.test(hex)) return { refused: 'has a "%" that is not followed by two hexadecimal digits' };
			const decoded = String.fromCharCode(Number.parseInt(hex, 16));
			tokens.push(
				UNRESERVED.test(decoded)
					? { kind: "char", char: decoded, decoded: true }
					: { kind: "encoded", text: `%${hex.toUpperCase()}`, wide: false },
			);
			i += 3;
			continue;
		}
		if (code > 0x7e) {
			const point = value.codePointAt(i) ?? code;
			// An unpaired surrogate has no UTF-8 encoding; codePointAt returns it as it is.
			if (point >= 0xd800 && point <= 0xdfff) return { refused: "contains a lone UTF-16 surrogate" };
			for (const byte of UTF8.encode(String.fromCodePoint(point))) {
				tokens.push({ kind: "encoded", text: percent(byte), wide: true });
			}
			i += point > 0xffff ? 2 : 1;
			continue;
		}
		tokens.push(
			ENCODED_WHEN_WRITTEN.has(char)
				? { kind: "encoded", text: percent(code), wide: false }
				: { kind: "char", char, decoded: false },
		);
		i++;
	}
	return tokens;
}

function percent(byte: number): string {
	return `%${byte.toString(16).toUpperCase().padStart(2, "0")}`;
}

function isChar(token: Token | undefined, char: string): boolean {
	return token?.kind === "char" && !token.decoded && token.char === char;
}

/** The first token at or after `from` that is one of `chars` as written, else the end. */
function indexOfChar(tokens: readonly Token[], chars: string, from: number): number {
	for (let i = from; i < tokens.length; i++) {
		const token = tokens[i];
		if (token?.kind === "char" && !token.decoded && chars.includes(token.char)) return i;
	}
	return tokens.length;
}

/** The index of the `:` that ends a scheme (a letter, then letters, digits, `+`, `-`, `.`; holes in a glob or template), else -1. */
function schemeEnd(tokens: readonly Token[], form: UriForm): number {
	for (let i = 0; i < tokens.length; i++) {
		const token = tokens[i];
		if (token === undefined) break;
		if (isChar(token, ":")) return i > 0 ? i : -1;
		if (token.kind === "hole" && form !== "uri") continue;
		if (token.kind !== "char" || token.decoded || !SCHEME_CHAR.test(token.char)) return -1;
		if (i === 0 && !/^[A-Za-z]$/.test(token.char)) return -1;
	}
	return -1;
}

/** The tokens as text; `lower` lower-cases the ASCII letters among them (holes stay as written). */
function joined(tokens: readonly Token[], lower = false): string {
	let text = "";
	for (const token of tokens) {
		if (token.kind === "char") text += lower ? token.char.toLowerCase() : token.char;
		else text += token.text;
	}
	return text;
}

/** userinfo as it is, the host lower-cased, the port without leading zeros, dropped when empty or the scheme's default. */
function normalAuthority(tokens: readonly Token[], scheme: string | null): Normalized {
	let at = -1;
	for (let i = 0; i < tokens.length; i++) if (isChar(tokens[i], "@")) at = i;
	const hostPort = tokens.slice(at + 1);
	if (hostPort.some((token) => token.kind === "encoded" && token.wide)) {
		return { refused: "has non-ASCII characters in its host" };
	}
	let close = -1;
	let colon = -1;
	for (let i = 0; i < hostPort.length; i++) {
		if (isChar(hostPort[i], "]")) close = i;
		if (isChar(hostPort[i], ":")) colon = i;
	}
	if (colon < close) colon = -1;
	const host = joined(colon < 0 ? hostPort : hostPort.slice(0, colon), true);
	const userinfo = joined(tokens.slice(0, at + 1));
	if (colon < 0) return { normal: `${userinfo}${host}` };
	const portTokens = hostPort.slice(colon + 1);
	const digits = portTokens.every((token) => token.kind === "char" && !token.decoded && /^[0-9]$/.test(token.char));
	if (!digits) return { normal: `${userinfo}${host}:${joined(portTokens)}` };
	const port = joined(portTokens).replace(/^0+(?=\d)/, "");
	const dropped = port === "" || (scheme !== null && DEFAULT_PORTS[scheme] === port);
	return { normal: `${userinfo}${host}${dropped ? "" : `:${port}`}` };
}

/**
 * The path without `.` and `..` segments (RFC 3986 §5.2.4, by segments): a
 * `..` takes the segment before it, never above the root; a last `.` or `..`
 * leaves a trailing `/`. A relative path stays relative.
 */
function normalPath(tokens: readonly Token[]): string {
	const segments: Token[][] = [[]];
	for (const token of tokens) {
		if (isChar(token, "/")) segments.push([]);
		else segments[segments.length - 1]?.push(token);
	}
	const rooted = isChar(tokens[0], "/");
	if (rooted) segments.shift();
	const kept: Token[][] = [];
	segments.forEach((segment, i) => {
		const dots = segment.every((token) => token.kind === "char" && token.char === ".") ? segment.length : 0;
		if (dots !== 1 && dots !== 2) {
			kept.push(segment);
			return;
		}
		if (dots === 2) kept.pop();
		if (i === segments.length - 1) kept.push([]);
	});
	const path = kept.map((segment) => joined(segment)).join("/");
	return rooted ? `/${path}` : path;
}
