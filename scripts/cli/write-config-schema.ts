/**
 * `npm run config-schema`: writes gateway.config.schema.json, the JSON Schema
 * of gateway.config.json, from the admin API's zod schemas. Committed, so
 * editors complete a config in a clone; a test fails when it is out of date.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { configJsonSchema } from "./gateway-config.ts";

export const SCHEMA_FILE = join(import.meta.dirname, "..", "..", "gateway.config.schema.json");

/** The file's text: the schema, tab-indented as the repository's JSON is. */
export function schemaText(): string {
	return `${JSON.stringify(configJsonSchema(), null, "\t")}\n`;
}

if (import.meta.main) {
	writeFileSync(SCHEMA_FILE, schemaText());
	console.log(`Wrote ${SCHEMA_FILE}.`);
}
