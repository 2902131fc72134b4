import { settingsFrom } from "../../config.ts";
import type { Env } from "../../env.ts";
import { toolOffered } from "../../governance/tool-shaping.ts";
import { GatewayError } from "../../mcp/gateway-error.ts";
import { compileApi } from "../../openapi/compile.ts";
import { fetchDocument } from "../../openapi/document-fetch.ts";
import { loadDocument } from "../../openapi/document-load.ts";
import type { CompiledDocument } from "../../registry/resources/servers.ts";
import { MAX_INLINE_DOCUMENT_BYTES, type ServerInput } from "../../registry/schemas.ts";

/** At most this many operations become one server's tools; the PUT's notes say when more were left out. */
export const MAX_DOCUMENT_TOOLS = 512;

/** What a PUT made of a server's document: the API compiled, and what the operator should know of it. */
export interface DocumentCompiled {
	compiled: CompiledDocument;
	notes: string[];
}

function refused(problem: string, where?: string): GatewayError {
	// The library's sentence may end in a full stop of its own; the refusal ends in one.
	const sentence = problem.replace(/\.$/, "");
	return new GatewayError("bad_request", `Bad Request: openapi: ${sentence}${where ? ` (at ${where})` : ""}.`);
}

/**
 * A server's OpenAPI document read and compiled at its PUT: fetched from its
 * URL (bounded, see document-fetch.ts) or taken as given, loaded and
 * compiled with the server's tool choice (`tools.include`/`exclude`), so a
 * document of thousands of operations keeps only those chosen. A document
 * that cannot become a server is a 400 with the library's problem and where.
 */
export async function compileServerDocument(
	env: Env,
	input: ServerInput & { openapi: NonNullable<ServerInput["openapi"]> },
	fetcher: typeof fetch = (input, init) => fetch(input, init),
): Promise<DocumentCompiled> {
	const settings = settingsFrom(env);
	const { openapi } = input;
	let source: string | Record<string, unknown>;
	let documentUrl: string | null = null;
	if (openapi.url !== undefined) {
		const fetched = await fetchDocument(openapi.url, {
			allowHttpUpstreams: settings.allowHttpUpstreams,
			fetch: fetcher,
		});
		if ("problem" in fetched) throw refused(fetched.problem);
		source = fetched.text;
		documentUrl = fetched.url;
	} else if (openapi.document !== undefined) {
		source = openapi.document;
	} else {
		throw refused("give either url or document");
	}
	const loaded = await loadDocument(source);
	if ("problem" in loaded) throw refused(loaded.problem, loaded.where);
	const made = compileApi(loaded.document, {
		documentUrl,
		baseUrl: openapi.baseUrl ?? null,
		keep: (toolName: string) => toolOffered(input.tools, toolName),
		maxTools: MAX_DOCUMENT_TOOLS,
	});
	if ("problem" in made) throw refused(made.problem, made.where);
	const base = new URL(made.api.baseUrl);
	if (base.protocol === "http:" && !settings.allowHttpUpstreams) {
		throw refused(
			"its base URL is plain http: credentials and calls would travel unencrypted; use https, or set ALLOW_HTTP_UPSTREAMS=true for local development",
		);
	}
	const document = inlineText(openapi.document);
	return { compiled: { api: made.api, document }, notes: made.notes };
}

/** An inline document's text as it is kept (to export it again); refused when larger than a registry row holds. */
function inlineText(document: string | Record<string, unknown> | undefined): string | null {
	if (document === undefined) return null;
	const text = typeof document === "string" ? document : JSON.stringify(document);
	if (new TextEncoder().encode(text).byteLength > MAX_INLINE_DOCUMENT_BYTES) {
		throw refused(
			`document is larger than ${MAX_INLINE_DOCUMENT_BYTES / 1024} KiB, more than an inline document may be; give its url`,
		);
	}
	return text;
}
