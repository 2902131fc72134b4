import type { Resource, ResourceTemplate } from "@modelcontextprotocol/sdk/types.js";
import type { PerServer } from "./aggregate.ts";
import { type CompiledUriTemplate, compileUriTemplate } from "./uri-template-match.ts";

/** Where a resource URI goes: one member, several (refused as ambiguous), or none. */
export type ResourceRoute = { server: string } | { ambiguous: readonly string[] } | null;

interface TemplateRoute {
	server: string;
	compiled: CompiledUriTemplate;
}

/**
 * Which member a resource URI of an aggregate belongs to. Precedence, so that
 * one member can never take another's reads:
 *
 * 1. A URI that a member listed exactly goes to that member. Listed by several
 *    members, it goes to none of them (ambiguous; the operator is told).
 * 2. Otherwise the matching template with the most literal characters wins
 *    (`notes://x/{id}` beats a catch-all `{+u}`); equally specific matching
 *    templates of different members are ambiguous.
 *
 * Templates are matched in time linear in the URI (`uri-template-match.ts`).
 */
export class ResourceRoutes {
	private readonly exact = new Map<string, string[]>();
	private readonly templates: TemplateRoute[] = [];
	/** Template text → members offering it, for `completion/complete` on a `ref/resource`. */
	private readonly templateOwners = new Map<string, string[]>();

	constructor(resources: PerServer<Resource>, templates: PerServer<ResourceTemplate>) {
		for (const [server, list] of resources) {
			for (const resource of list) addOwner(this.exact, resource.uri, server);
		}
		for (const [server, list] of templates) {
			for (const template of list) {
				addOwner(this.templateOwners, template.uriTemplate, server);
				const compiled = compileUriTemplate(template.uriTemplate);
				if (compiled) this.templates.push({ server, compiled });
				else console.warn(`member ${server}: resource template '${template.uriTemplate}' is not usable and is ignored`);
			}
		}
	}

	/** URIs and templates that several members offer: refused, and worth an operator's look. */
	conflicts(): Array<{ key: string; servers: readonly string[] }> {
		return [...this.exact, ...this.templateOwners]
			.filter(([, servers]) => servers.length > 1)
			.map(([key, servers]) => ({ key, servers }));
	}

	/** The member a URI routes to (see the precedence above). */
	route(uri: string): ResourceRoute {
		const listed = this.exact.get(uri);
		if (listed) return one(listed);
		let best = -1;
		let winners: string[] = [];
		for (const { server, compiled } of this.templates) {
			if (compiled.literalLength < best || !compiled.matches(uri)) continue;
			if (compiled.literalLength > best) {
				best = compiled.literalLength;
				winners = [];
			}
			if (!winners.includes(server)) winners.push(server);
		}
		return winners.length === 0 ? null : one(winners);
	}

	/** The member offering a template (by its exact text), for completions. */
	routeTemplate(template: string): ResourceRoute {
		const owners = this.templateOwners.get(template);
		return owners ? one(owners) : null;
	}
}

function one(servers: readonly string[]): ResourceRoute {
	const [first] = servers;
	if (first === undefined) return null;
	return servers.length === 1 ? { server: first } : { ambiguous: servers };
}

function addOwner(owners: Map<string, string[]>, key: string, server: string): void {
	const servers = owners.get(key);
	if (!servers) owners.set(key, [server]);
	else if (!servers.includes(server)) servers.push(server);
}
