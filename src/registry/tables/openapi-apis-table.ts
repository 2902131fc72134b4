import { z } from "zod";
import { CompiledApiSchema } from "../openapi-records.ts";
import { BOOLEAN_INTEGER, JSON_TEXT, RecordTable } from "./record-rows.ts";
import type { TableSchema } from "./table-schema.ts";

/**
 * The compiled APIs of servers made from OpenAPI documents, one row per
 * server: what `openapi/<server>` publishes, and the document as given when
 * it was given inline (to export it again). The compiled form is bounded when
 * it is made (src/openapi/) and the inline text by its schema, so a row stays
 * well under SQLite's row limit in a Durable Object.
 */

/** What `openapi/<server>` holds: the compiled API, under the digest its address names. */
export const PublishedApiSchema = z.strictObject({
	server: z.string(),
	/** The digest in the server's address (`openApiUrl`): a reader checks it is reading what the address names. */
	digest: z.string(),
	api: CompiledApiSchema,
	/** By security scheme name; values may hold `${UPSTREAM_…}` references, resolved at each call. */
	credentials: z.record(z.string(), z.string()),
	/**
	 * Whether its calls carry each caller's own token (an auth mode other than operator): the MCP
	 * request's bearer token is then the caller's, placed where the document's schemes say.
	 */
	personal: z.boolean(),
});
export type PublishedApi = z.infer<typeof PublishedApiSchema>;

const ApiRowSchema = PublishedApiSchema.extend({
	/** The document's text as the operator gave it inline; null when it was fetched from a URL. */
	document: z.string().nullable(),
});
export type ApiRow = z.infer<typeof ApiRowSchema>;

const apis = new RecordTable("openapi_apis", "server", ApiRowSchema, {
	api: JSON_TEXT,
	credentials: JSON_TEXT,
	personal: BOOLEAN_INTEGER,
});

export const OPENAPI_APIS_SCHEMA: TableSchema = {
	create: `
		-- Servers made from OpenAPI documents: each one's API compiled at PUT, and its inline document.
		CREATE TABLE IF NOT EXISTS openapi_apis (
			server TEXT PRIMARY KEY,
			digest TEXT NOT NULL,
			api TEXT NOT NULL, -- JSON: the compiled API (openapi-records.ts)
			credentials TEXT NOT NULL, -- JSON: scheme name to a value that may reference \${UPSTREAM_...}
			personal INTEGER NOT NULL, -- 1: its calls carry each caller's own token
			document TEXT -- the document as given inline; NULL: fetched from the server's openapi.url
		);
	`,
	addedColumns: [],
};

export class OpenApiApisTable {
	constructor(private readonly sql: SqlStorage) {}

	/** What `openapi/<server>` publishes; null: the server is not made from a document. */
	published(server: string): PublishedApi | null {
		const row = apis.get(this.sql, server);
		if (!row) return null;
		const { document: _document, ...published } = row;
		return published;
	}

	/** The inline document of `server`; null when there is none. */
	document(server: string): string | null {
		return apis.get(this.sql, server)?.document ?? null;
	}

	servers(): string[] {
		return apis.keys(this.sql);
	}

	put(row: ApiRow): void {
		apis.put(this.sql, row);
	}

	/** Deletes the API of `server`; whether it had one. */
	delete(server: string): boolean {
		return this.sql.exec("DELETE FROM openapi_apis WHERE server = ?", server).rowsWritten > 0;
	}
}
