import { z } from "zod";
import type { KvPublisher } from "../kv-publisher.ts";
import { KV_NAMES } from "../kv-records.ts";
import { describeIssues } from "../schemas.ts";
import type { RegistryTables } from "../tables/registry-tables.ts";
import { type ObservedTools, type PinInput, PinInputSchema, type ServerPins } from "../tool-pins.ts";

/** At most this many tools are pinned per write: a list longer than that is an upstream flooding us. */
const MAX_PINS_PER_WRITE = 1_000;
const PinInputsSchema = z.array(PinInputSchema).max(MAX_PINS_PER_WRITE);

/** The RegistryDO's pinned tool definitions, and the tools sessions last saw a server list. */
export class PinsResource {
	constructor(
		private readonly tables: RegistryTables,
		private readonly publisher: KvPublisher,
	) {}

	/** A server's pins (`GET /admin/servers/:name/tools`); null until its tools were first recorded. */
	of(server: string): ServerPins | null {
		return this.tables.pins.of(server);
	}

	/**
	 * Trust on first use, called by the gateway when it first sees a server's
	 * tools (after a tools/list): stores the digests only when the server has no
	 * pin at all, so a tool that appears later stays "new". Refused for another
	 * incarnation than the current one (a list fetched before a delete and
	 * re-create must not pin the new server). Under pinning "off" nothing is
	 * recorded. A write only when something is recorded; otherwise one read.
	 */
	async recordFirstSeen(
		server: string,
		generation: string,
		pins: readonly PinInput[],
	): Promise<{ recorded: boolean; pins: ServerPins | null } | { refused: string }> {
		const parsed = PinInputsSchema.safeParse(pins);
		if (!parsed.success) return { refused: `pins: ${describeIssues(parsed.error)}` };
		const current = this.tables.servers.get(server);
		if (!current) return { refused: `no server named '${server}'` };
		if (current.generation !== generation) return { refused: `'${server}' is another incarnation now` };
		if (current.pinning === "off") return { recorded: false, pins: this.tables.pins.of(server) };
		const now = Date.now();
		const recorded = this.tables.pins.recordFirstSeen(server, generation, parsed.data, now);
		if (recorded) {
			// The first list is also the first observed: the admin's view of a server it cannot list starts from it.
			this.tables.observedTools.put(server, generation, parsed.data, now);
			await this.publisher.publishWrite([KV_NAMES.pins(server)]);
		}
		return { recorded, pins: this.tables.pins.of(server) };
	}

	/**
	 * A session saw the server list a tool not as approved (new, changed, or a
	 * pinned one missing): `pins` are what it listed, kept as the server's last
	 * observed list for the admin (`GET /admin/servers/:name/tools` of a server
	 * whose requests need a caller). Written only when it differs from the list
	 * kept; refused for another incarnation. Published nowhere.
	 */
	recordObserved(
		server: string,
		generation: string,
		pins: readonly PinInput[],
	): { recorded: boolean } | { refused: string } {
		const parsed = PinInputsSchema.safeParse(pins);
		if (!parsed.success) return { refused: `pins: ${describeIssues(parsed.error)}` };
		const current = this.tables.servers.get(server);
		if (!current) return { refused: `no server named '${server}'` };
		if (current.generation !== generation) return { refused: `'${server}' is another incarnation now` };
		if (current.pinning === "off") return { recorded: false };
		return { recorded: this.tables.observedTools.put(server, generation, parsed.data, Date.now()) };
	}

	/** What sessions last saw the server list, of its current incarnation; null when none was reported. */
	observed(name: string): ObservedTools | null {
		const server = this.tables.servers.get(name);
		const observed = this.tables.observedTools.get(name);
		return server && observed?.generation === server.generation ? observed : null;
	}

	/**
	 * The operator approves definitions (`POST /admin/servers/:name/tools/approve`):
	 * `pins` are stored as approved (replacing those of the same names), the
	 * pins named in `forget` (tools the server no longer lists) are dropped.
	 */
	async approve(
		server: string,
		generation: string,
		pins: readonly PinInput[],
		forget: readonly string[],
	): Promise<{ pins: ServerPins | null; refused: string | null }> {
		const refused = (reason: string) => ({ pins: null, refused: reason });
		const parsed = PinInputsSchema.safeParse(pins);
		if (!parsed.success) return refused(`pins: ${describeIssues(parsed.error)}`);
		const current = this.tables.servers.get(server);
		if (!current) return refused(`no server named '${server}'`);
		if (current.generation !== generation) return refused(`'${server}' was deleted and created again meanwhile`);
		this.tables.pins.approve(server, generation, parsed.data, forget, Date.now());
		await this.publisher.publishWrite([KV_NAMES.pins(server)]);
		return { pins: this.tables.pins.of(server), refused: null };
	}
}
