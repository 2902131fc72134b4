import { byName } from "../../mcp/aggregate.ts";
import { type ObservedTools, ObservedToolsSchema, type PinInput } from "../tool-pins.ts";
import { JSON_TEXT, RecordTable } from "./record-rows.ts";
import type { TableSchema } from "./table-schema.ts";

/**
 * The tools sessions last saw each server list, one row per server (the
 * definitions as JSON text, parsed on read). Nothing of it is published to KV.
 */

const observed = new RecordTable("observed_tools", "server", ObservedToolsSchema, { tools: JSON_TEXT });

export const OBSERVED_TOOLS_SCHEMA: TableSchema = {
	create: `
		CREATE TABLE IF NOT EXISTS observed_tools (
			server TEXT PRIMARY KEY,
			generation TEXT NOT NULL,
			observed_at INTEGER NOT NULL,
			tools TEXT NOT NULL -- JSON array of { digest, definition }, in name order
		);
	`,
	addedColumns: [],
};

export class ObservedToolsTable {
	constructor(private readonly sql: SqlStorage) {}

	/** The list last observed of `server`, or null (never reported, or deleted since). */
	get(server: string): ObservedTools | null {
		return observed.get(this.sql, server) ?? null;
	}

	/**
	 * Keeps `tools` as the list last observed of `server`; writes only when it
	 * differs from the one kept (another incarnation, or other digests).
	 * Whether it wrote.
	 */
	put(server: string, generation: string, tools: readonly PinInput[], now: number): boolean {
		const sorted = [...tools].sort((a, b) => byName(a.definition, b.definition));
		const kept = this.get(server);
		const same =
			kept !== null &&
			kept.generation === generation &&
			kept.tools.length === sorted.length &&
			kept.tools.every((tool, i) => tool.digest === sorted[i]?.digest);
		if (same) return false;
		observed.put(this.sql, { server, generation, observedAt: now, tools: sorted });
		return true;
	}

	/** Forgets what was observed of `server` (it was deleted). */
	delete(server: string): void {
		observed.delete(this.sql, server);
	}
}
