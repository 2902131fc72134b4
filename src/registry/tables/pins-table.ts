import { z } from "zod";
import { type PinInput, type ServerPins, ToolPinSchema } from "../tool-pins.ts";
import { JSON_TEXT, RecordTable } from "./record-rows.ts";
import type { TableSchema } from "./table-schema.ts";

/**
 * Pinned tool definitions: a server's approved tools, one row per tool, and
 * the servers whose tools were recorded (first seen or approved), from which
 * on a tool not pinned is new.
 */

/** A server's approved tool definitions, one row per tool (written by hand: the key is two columns). */
const toolPins = new RecordTable("tool_pins", "server", ToolPinSchema.extend({ server: z.string() }), {
	definition: JSON_TEXT,
});

/** Servers whose tools were recorded (first seen or approved): from then on, a tool not pinned is new. */
const pinnedServers = new RecordTable(
	"pinned_servers",
	"server",
	z.object({ server: z.string(), generation: z.string(), recordedAt: z.number() }),
);

export const PINS_SCHEMA: TableSchema = {
	create: `
		-- Approved tool definitions (pinning): the digest and the definition it covers, per server and tool.
		CREATE TABLE IF NOT EXISTS tool_pins (
			server TEXT NOT NULL,
			tool TEXT NOT NULL,
			digest TEXT NOT NULL,
			definition TEXT NOT NULL, -- JSON: name, description, inputSchema, outputSchema, annotations
			approved_at INTEGER NOT NULL,
			PRIMARY KEY (server, tool)
		);
		-- Servers whose tools have been recorded, and for which incarnation.
		CREATE TABLE IF NOT EXISTS pinned_servers (
			server TEXT PRIMARY KEY,
			generation TEXT NOT NULL,
			recorded_at INTEGER NOT NULL
		);
	`,
	addedColumns: [],
};

export class PinsTable {
	constructor(private readonly sql: SqlStorage) {}

	/** A server's pins as published (`pins/<server>`); null until its tools were first recorded. */
	of(server: string): ServerPins | null {
		const recorded = pinnedServers.get(this.sql, server);
		if (!recorded) return null;
		const pins = toolPins
			.select(this.sql, "WHERE server = ? ORDER BY tool", server)
			.map(({ server: _server, ...pin }) => pin);
		return { server, generation: recorded.generation, recordedAt: recorded.recordedAt, pins };
	}

	/** Servers with recorded tools. */
	servers(): string[] {
		return this.sql
			.exec<{ server: string }>("SELECT server FROM pinned_servers")
			.toArray()
			.map((row) => row.server);
	}

	/**
	 * Trust on first use: records `pins` as approved, but only when the server
	 * has nothing recorded yet (even an empty list counts as recorded); whether it wrote.
	 */
	recordFirstSeen(server: string, generation: string, pins: readonly PinInput[], now: number): boolean {
		if (pinnedServers.get(this.sql, server)) return false;
		this.write(server, generation, pins, now);
		return true;
	}

	/**
	 * Approves `pins` (replacing what was pinned under their names) and drops
	 * the pins named in `forget`; records the server's tools as seen. Pins of
	 * another incarnation of the server are dropped first.
	 */
	approve(server: string, generation: string, pins: readonly PinInput[], forget: readonly string[], now: number): void {
		const recorded = pinnedServers.get(this.sql, server);
		if (recorded && recorded.generation !== generation) this.delete(server);
		for (const tool of forget) this.sql.exec("DELETE FROM tool_pins WHERE server = ? AND tool = ?", server, tool);
		this.write(server, generation, pins, recorded?.generation === generation ? recorded.recordedAt : now, now);
	}

	/** Forgets a server's pins (the server was deleted); whether there were any. */
	delete(server: string): boolean {
		this.sql.exec("DELETE FROM tool_pins WHERE server = ?", server);
		return pinnedServers.delete(this.sql, server);
	}

	private write(
		server: string,
		generation: string,
		pins: readonly PinInput[],
		recordedAt: number,
		approvedAt = recordedAt,
	): void {
		pinnedServers.put(this.sql, { server, generation, recordedAt });
		for (const { digest, definition } of pins) {
			this.sql.exec(
				`INSERT INTO tool_pins (server, tool, digest, definition, approved_at) VALUES (?, ?, ?, ?, ?)
				 ON CONFLICT(server, tool) DO UPDATE SET digest = excluded.digest, definition = excluded.definition, approved_at = excluded.approved_at`,
				server,
				definition.name,
				digest,
				JSON.stringify(definition),
				approvedAt,
			);
		}
	}
}
