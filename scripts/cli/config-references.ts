/**
 * What `mcpgw plan` checks before `apply` would meet it: every name an entry
 * refers to (a virtual server's members, a key's or an access rule's servers,
 * a policy's or a guard's `applies`) is declared in the file or held by the gateway, and no
 * name is both a server and a virtual server. Under --prune only the file
 * counts, since what it does not declare is deleted. Each problem is one
 * sentence naming the entry, the field and the name most likely meant.
 */
import type { PolicyApplies } from "../../src/registry/policy-records.ts";
import { quoteList } from "../../src/registry/quoted-names.ts";
import type { HeldState } from "./config-state.ts";
import type { GatewayConfig, Kind } from "./gateway-config.ts";

/** The names of each kind there will be once the plan is applied. */
type After = Record<Exclude<Kind, "keys">, Set<string>> & { keyIds: Set<string> };

function namesAfter(config: GatewayConfig, held: HeldState, prune: boolean): After {
	const names = (kind: Exclude<Kind, "keys">) =>
		new Set([...Object.keys(config[kind]), ...(prune ? [] : held[kind].map((entry) => entry.name))]);
	// Ids of keys made by this apply are not known yet; under --prune, only keys the file still declares stay.
	const keys = held.keys.filter((entry) => !prune || entry.name in config.keys);
	return {
		servers: names("servers"),
		virtualServers: names("virtualServers"),
		accessRules: names("accessRules"),
		policies: names("policies"),
		guards: names("guards"),
		keyIds: new Set(keys.map((entry) => String(entry.meta.id))),
	};
}

/**
 * One sentence for the names of `given` that `known` lacks, or nothing:
 * "keys.ci.servers: no server or virtual server named 'demoo' (did you mean 'demo'?) in the file or on the gateway."
 */
function missing(
	where: string,
	words: string,
	given: readonly string[] | undefined,
	known: ReadonlySet<string>,
	place: string,
): string[] {
	const absent = [...new Set((given ?? []).filter((name) => !known.has(name)))];
	return absent.length === 0 ? [] : [`${where}: no ${words} ${quoteList(absent, known)} ${place}.`];
}

/** Each reference the plan would leave pointing at nothing, and each name two kinds would share. */
export function referenceProblems(config: GatewayConfig, held: HeldState, prune: boolean): string[] {
	const after = namesAfter(config, held, prune);
	const place = prune ? "in the file (--prune deletes the rest)" : "in the file or on the gateway";
	const endpoints = new Set([...after.servers, ...after.virtualServers]);
	const problems: string[] = [];
	for (const name of Object.keys(config.servers)) {
		if (name in config.virtualServers) {
			problems.push(`servers.${name} and virtualServers.${name}: servers and virtual servers share names; rename one.`);
		} else if (held.virtualServers.some((entry) => entry.name === name)) {
			problems.push(
				`servers.${name}: '${name}' is a virtual server on the gateway, and servers and virtual servers share names; rename the server, or remove the virtual server first.`,
			);
		}
	}
	for (const name of Object.keys(config.virtualServers)) {
		if (!(name in config.servers) && held.servers.some((entry) => entry.name === name)) {
			problems.push(
				`virtualServers.${name}: '${name}' is a server on the gateway, and servers and virtual servers share names; rename the virtual server, or remove the server first.`,
			);
		}
	}
	for (const [name, virtual] of Object.entries(config.virtualServers)) {
		const where = `virtualServers.${name}.servers`;
		const virtualMembers = virtual.servers.filter((member) => after.virtualServers.has(member));
		if (virtualMembers.length > 0) {
			problems.push(`${where}: members must be servers, not virtual servers: ${quoteList(virtualMembers)}.`);
		}
		const others = virtual.servers.filter((member) => !after.virtualServers.has(member));
		problems.push(...missing(where, "server named", others, after.servers, place));
	}
	for (const [name, key] of Object.entries(config.keys)) {
		problems.push(...missing(`keys.${name}.servers`, "server or virtual server named", key.servers, endpoints, place));
	}
	for (const [name, rule] of Object.entries(config.accessRules)) {
		const where = `accessRules.${name}.servers`;
		problems.push(...missing(where, "server or virtual server named", rule.servers, endpoints, place));
	}
	for (const section of ["policies", "guards"] as const) {
		for (const [name, entry] of Object.entries(config[section])) {
			problems.push(...appliesProblems(`${section}.${name}.applies`, entry.applies, after, place));
		}
	}
	return problems;
}

/** The names a policy's or a guard's `applies` gives that there will not be (its `tools` are globs, not names). */
function appliesProblems(
	where: string,
	applies: PolicyApplies | null | undefined,
	after: After,
	place: string,
): string[] {
	return [
		...missing(`${where}.servers`, "server named", applies?.servers, after.servers, place),
		...missing(`${where}.virtualServers`, "virtual server named", applies?.virtualServers, after.virtualServers, place),
		...missing(`${where}.rules`, "access rule named", applies?.rules, after.accessRules, place),
		...missing(`${where}.keys`, "API key with id", applies?.keys, after.keyIds, "on the gateway"),
	];
}
