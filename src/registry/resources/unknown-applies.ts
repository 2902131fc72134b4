import type { PolicyApplies } from "../policy-records.ts";
import { quoteList } from "../quoted-names.ts";
import type { RegistryTables } from "../tables/registry-tables.ts";

/**
 * Why an `applies` (a policy's or a guard's) names what is not there, in a
 * sentence; null when everything it names exists. A record whose server or
 * key is misspelt would silently apply nowhere, so it is refused instead.
 */
export function unknownApplies(tables: RegistryTables, applies: PolicyApplies | undefined): string | null {
	if (!applies) return null;
	const { servers, virtualServers, keys, accessRules } = tables;
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
		["rules", "no access rule named", applies.rules, (names) => accessRules.existing(names), () => accessRules.names()],
	];
	const problems = checks.flatMap(([field, words, names, known, candidates]) => {
		if (!names) return [];
		const present = known([...names]);
		const unknown = [...new Set(names.filter((name) => !present.has(name)))];
		return unknown.length === 0 ? [] : [`applies.${field}: ${words} ${quoteList(unknown, candidates())}`];
	});
	return problems.length === 0 ? null : problems.join("; ");
}
