import type { KvPublisher } from "../kv-publisher.ts";
import { KV_NAMES } from "../kv-records.ts";
import type { PolicyApplies, PolicyInput, PolicyRecord } from "../policy-records.ts";
import { quoteList } from "../quoted-names.ts";
import type { RegistryTables } from "../tables/registry-tables.ts";

/** The RegistryDO's tool policies: kept and published here, compiled by governance. */
export class PoliciesResource {
	constructor(
		private readonly tables: RegistryTables,
		private readonly publisher: KvPublisher,
	) {}

	/**
	 * Creates or replaces a tool policy and publishes the policies. The
	 * expression was compiled by the caller (the admin route, with governance's
	 * compiler); here every name in `applies` must exist, since a policy whose
	 * server or key is misspelt would silently apply nowhere. A refused policy
	 * leaves the existing one as it was.
	 */
	async put(
		name: string,
		input: PolicyInput,
	): Promise<{ policy: PolicyRecord; created: boolean } | { invalid: string }> {
		const invalid = this.unknownApplies(input.applies);
		if (invalid) return { invalid };
		const written = this.tables.policies.write(name, input, Date.now());
		await this.publisher.publishWrite([KV_NAMES.policies]);
		return written;
	}

	get(name: string): PolicyRecord | null {
		return this.tables.policies.get(name);
	}

	list(): PolicyRecord[] {
		return this.tables.policies.list();
	}

	delete(name: string): Promise<boolean> {
		return this.publisher.publishDelete(this.tables.policies.delete(name), () => [KV_NAMES.policies]);
	}

	/** Why a policy's `applies` names what is not there, in a sentence; null when everything it names exists. */
	private unknownApplies(applies: PolicyApplies | undefined): string | null {
		if (!applies) return null;
		const { servers, virtualServers, keys, accessRules } = this.tables;
		// Each: the field, its words, the names it gives, which of them exist, and every name it could have meant.
		const checks: Array<
			[string, string, readonly string[] | undefined, (names: string[]) => Set<string>, () => string[]]
		> = [
			[
				"servers",
				"no server named",
				applies.servers,
				(names) => new Set(servers.named(names).map((server) => server.name)),
				() => servers.names(),
			],
			[
				"virtualServers",
				"no virtual server named",
				applies.virtualServers,
				(names) => new Set(names.filter((name) => virtualServers.get(name) !== null)),
				() => virtualServers.names(),
			],
			["keys", "no API key with id", applies.keys, (ids) => keys.existing(ids), () => keys.ids()],
			[
				"rules",
				"no access rule named",
				applies.rules,
				(names) => accessRules.existing(names),
				() => accessRules.names(),
			],
		];
		const problems = checks.flatMap(([field, words, names, known, candidates]) => {
			if (!names) return [];
			const present = known([...names]);
			const unknown = [...new Set(names.filter((name) => !present.has(name)))];
			return unknown.length === 0 ? [] : [`applies.${field}: ${words} ${quoteList(unknown, candidates())}`];
		});
		return problems.length === 0 ? null : problems.join("; ");
	}
}
