/**
 * A server made from an OpenAPI document, in a gateway config: what the admin
 * API shows of it (`openapi: {url | document: "inline", baseUrl?, credentials, tools}`)
 * turned back into the body that made it, so that export writes it and plan
 * compares it as it compares every other field. An inline document is read
 * from `GET /admin/servers/:name/openapi`; a document given by URL is its URL
 * (the gateway fetches it again at each PUT, so plan cannot see the text behind
 * it change). Credentials are shown as written when they are only
 * `${UPSTREAM_…}` references, and masked otherwise, as header values are.
 */
import { createHash } from "node:crypto";
import { z } from "zod";
import type { AdminClient } from "./admin-client.ts";
import { comparableUrl, isReferencesOnly, referenceFix } from "./config-masking.ts";

/** What the admin API lists of a document server (src/edge/admin-views.ts). */
const OpenApiViewSchema = z.object({
	url: z.string().optional(),
	document: z.literal("inline").optional(),
	baseUrl: z.string().optional(),
	credentials: z.record(z.string(), z.string()),
});

/** `GET /admin/servers/:name/openapi`: where the document came from, or its text. */
const OpenApiSourceSchema = z.union([z.object({ url: z.string() }), z.object({ document: z.string() })]);

/**
 * A document as a config holds it: JSON text as its object (what a person
 * edits in a JSON file), anything else (YAML) as its text. Both sides of a
 * comparison go through it, so an object in the file and the same object
 * kept as text by the gateway are one document.
 */
export function documentValue(document: unknown): unknown {
	if (typeof document !== "string") return document;
	try {
		const parsed: unknown = JSON.parse(document);
		return parsed !== null && typeof parsed === "object" && !Array.isArray(parsed) ? parsed : document;
	} catch {
		// Not JSON: YAML text, kept as written.
		return document;
	}
}

/** A server's `openapi` body from what the admin API lists, reading an inline document's text. */
export async function heldOpenApi(client: AdminClient, name: string, view: unknown): Promise<Record<string, unknown>> {
	const shown = OpenApiViewSchema.parse(view);
	let source: Record<string, unknown> = { url: shown.url };
	if (shown.document !== undefined) {
		const held = OpenApiSourceSchema.parse(
			await client.request<unknown>("GET", `/servers/${encodeURIComponent(name)}/openapi`),
		);
		source = "document" in held ? { document: documentValue(held.document) } : { url: held.url };
	}
	const credentials = Object.keys(shown.credentials).length > 0 ? shown.credentials : undefined;
	return { ...source, baseUrl: shown.baseUrl, credentials };
}

/** A document's short name in a plan: its size and digest, never its text (which may be thousands of lines). */
function documentSummary(document: unknown): string {
	const text = typeof document === "string" ? document : JSON.stringify(document);
	const digest = createHash("sha256").update(text).digest("hex").slice(0, 12);
	return `(document, ${Buffer.byteLength(text)} bytes, sha256 ${digest}…)`;
}

/** A file's `openapi` as the admin API would show it: URLs masked, the document normalized, held masked credentials taken as held. */
export function comparableOpenApi(
	where: string,
	desired: Record<string, unknown>,
	held: Record<string, unknown> | undefined,
	warnings: string[],
): Record<string, unknown> {
	const url = typeof desired.url === "string" ? comparableUrl(desired.url) : undefined;
	const baseUrl = typeof desired.baseUrl === "string" ? comparableUrl(desired.baseUrl) : undefined;
	const credentials = { ...((desired.credentials ?? {}) as Record<string, string>) };
	const heldCredentials = (held?.credentials ?? {}) as Record<string, string>;
	for (const scheme of Object.keys(credentials)) {
		if (heldCredentials[scheme] === "***" && !isReferencesOnly(credentials[scheme] ?? "")) {
			warnings.push(`${where}.credentials.${scheme} is a literal the gateway masks: plan cannot see it change.`);
			credentials[scheme] = "***";
		}
	}
	return {
		...desired,
		url,
		baseUrl,
		document: desired.document === undefined ? undefined : documentValue(desired.document),
		credentials: Object.keys(credentials).length > 0 ? credentials : undefined,
	};
}

/** The changes plan lists under `openapi.document.…`, folded into one line naming each document by size and digest. */
export function foldDocumentChanges<T extends { field: string; from: unknown; to: unknown }>(
	diff: T[],
	from: unknown,
	to: unknown,
): Array<T | { field: string; from: unknown; to: unknown }> {
	const field = "openapi.document";
	const rest = diff.filter((change) => change.field !== field && !change.field.startsWith(`${field}.`));
	if (rest.length === diff.length) return diff;
	const summary = (body: unknown) => {
		const document = (body as { openapi?: { document?: unknown } } | undefined)?.openapi?.document;
		return document === undefined ? undefined : documentSummary(document);
	};
	return [...rest, { field, from: summary(from), to: summary(to) }];
}

/**
 * Literal credentials of a document server, refused: every value of
 * `credentials` is a credential, and the gateway would mask it, so it could
 * be neither compared nor exported.
 */
export function credentialFindings(
	name: string,
	openapi: { credentials?: Record<string, string> } | undefined,
): string[] {
	return Object.entries(openapi?.credentials ?? {})
		.filter(([, value]) => !isReferencesOnly(value))
		.map(
			([scheme, _value]) =>
				`servers.${name}.openapi.credentials.${scheme} holds a literal credential; ${referenceFix(name, scheme)}.`,
		);
}

/** What export cannot write of a document server: masked credentials and URL query values, each said where. */
export function maskedOpenApiNotes(name: string, openapi: Record<string, unknown> | undefined): string[] {
	if (!openapi) return [];
	const notes: string[] = [];
	for (const [scheme, value] of Object.entries((openapi.credentials ?? {}) as Record<string, string>)) {
		if (value === "***") {
			notes.push(
				`servers.${name}.openapi.credentials.${scheme} holds a literal value the gateway masks: exported as "***"; write a \${UPSTREAM_…} reference instead.`,
			);
		}
	}
	for (const field of ["url", "baseUrl"]) {
		const value = openapi[field];
		if (typeof value === "string" && value.includes("=***")) {
			notes.push(`servers.${name}.openapi.${field} has query values the gateway masks: exported as "***".`);
		}
	}
	return notes;
}

/**
 * A body made canonical (keys sorted, nulls dropped) to compare, with its
 * document put back as the file gave it: a document is sent as written, since
 * a null in it means something and its keys' order is the author's.
 */
export function withDocumentAsGiven(
	body: Record<string, unknown>,
	given: Record<string, unknown>,
): Record<string, unknown> {
	const document = (given.openapi as { document?: unknown } | undefined)?.document;
	if (document === undefined) return body;
	return { ...body, openapi: { ...(body.openapi as Record<string, unknown>), document } };
}
