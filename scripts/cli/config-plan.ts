/**
 * `mcpgw plan`: what applying a config would change, entry by entry (create,
 * replace, delete under --prune) with each changed field, and what it refuses
 * to apply (a secret written into the file instead of referenced, a name
 * referred to that neither the file nor the gateway has: config-references.ts).
 */
import { CliError } from "./admin-client.ts";
import { comparableUrl, isReferencesOnly, REFERENCE, referenceFix, SCHEME_ONLY } from "./config-masking.ts";
import { comparableOpenApi, credentialFindings, foldDocumentChanges, withDocumentAsGiven } from "./config-openapi.ts";
import { referenceProblems } from "./config-references.ts";
import { canonical, type HeldEntry, type HeldState, sameValue } from "./config-state.ts";
import { type GatewayConfig, KINDS, type Kind } from "./gateway-config.ts";

export type Action = "create" | "replace" | "delete";

export interface FieldChange {
	field: string;
	from: unknown;
	to: unknown;
}

export interface Change {
	kind: Kind;
	name: string;
	action: Action;
	/** The body to send (create, replace). */
	body?: Record<string, unknown>;
	diff: FieldChange[];
	/** Keys only: the ids revoked (a replaced key's old ones, a pruned key). */
	revokes?: string[];
}

export interface Plan {
	/** Creates and replaces in apply order, then deletes in reverse order. */
	changes: Change[];
	unchanged: number;
	warnings: string[];
	/** Sentences saying why the config cannot be applied as written. */
	refusals: string[];
}

/** What each section is called in sentences. */
export const KIND_WORDS: Record<Kind, string> = {
	servers: "server",
	virtualServers: "virtual server",
	accessRules: "access rule",
	policies: "policy",
	guards: "guard",
	keys: "key",
};

/** Headers whose value is a credential by name. */
const CREDENTIAL_HEADER = /^(authorization|proxy-authorization|cookie)$|key|token|secret|auth|password|session/i;
/** A run that looks like a token: long, without spaces, of base64 or hex characters. */
const TOKEN_LIKE = /[A-Za-z0-9+/_=.-]{24,}/;

/** Literal secrets in a server's headers: refused for credential headers, warned about for token-like values. */
function secretFindings(name: string, headers: Record<string, string>, refusals: string[], warnings: string[]): void {
	for (const [header, value] of Object.entries(headers)) {
		const literal = value.replace(REFERENCE, "");
		if (SCHEME_ONLY.test(literal)) continue;
		const fix = referenceFix(name, header);
		if (CREDENTIAL_HEADER.test(header)) {
			refusals.push(`servers.${name}.headers.${header} holds a literal credential; ${fix}.`);
		} else if (TOKEN_LIKE.test(literal)) {
			warnings.push(`servers.${name}.headers.${header} looks like it holds a secret; if it does, ${fix}.`);
		}
	}
}

/** Leaves of an object by dotted path; arrays and scalars are leaves. */
function leaves(value: unknown, prefix = "", out = new Map<string, unknown>()): Map<string, unknown> {
	if (value !== null && typeof value === "object" && !Array.isArray(value)) {
		for (const [key, field] of Object.entries(value)) leaves(field, prefix ? `${prefix}.${key}` : key, out);
		if (Object.keys(value).length === 0 && prefix) out.set(prefix, {});
	} else if (prefix) out.set(prefix, value);
	return out;
}

/** Each field that differs between two bodies. */
export function diffBodies(from: unknown, to: unknown): FieldChange[] {
	const [before, after] = [leaves(canonical(from)), leaves(canonical(to))];
	const fields = [...new Set([...before.keys(), ...after.keys()])].sort();
	return fields
		.filter((field) => !sameValue(before.get(field), after.get(field)))
		.map((field) => ({ field, from: before.get(field), to: after.get(field) }));
}

/**
 * A server's body as it can be compared with what the admin API shows: the
 * URL with query values masked, and a header whose value the gateway masks
 * taken as the gateway has it (a literal cannot be compared; warned about).
 */
function comparableServer(
	name: string,
	desired: Record<string, unknown>,
	held: HeldEntry | undefined,
	warnings: string[],
): Record<string, unknown> {
	// A server reached through connectors has no URL to compare.
	const url = typeof desired.url === "string" ? comparableUrl(desired.url) : undefined;
	if (url !== undefined && url !== desired.url && url.includes("=***")) {
		warnings.push(`servers.${name}.url has query values, which the gateway masks: plan cannot see them change.`);
	}
	const headers = { ...((desired.headers ?? {}) as Record<string, string>) };
	const heldHeaders = (held?.body.headers ?? {}) as Record<string, string>;
	for (const [header, value] of Object.entries(headers)) {
		if (heldHeaders[header] === "***" && !isReferencesOnly(value)) {
			warnings.push(`servers.${name}.headers.${header} is a literal the gateway masks: plan cannot see it change.`);
			headers[header] = "***";
		}
	}
	const openapi =
		desired.openapi === undefined
			? undefined
			: comparableOpenApi(
					`servers.${name}.openapi`,
					desired.openapi as Record<string, unknown>,
					held?.body.openapi as Record<string, unknown> | undefined,
					warnings,
				);
	return { ...desired, url, headers, openapi };
}

/** The plan from a parsed config and the gateway's state; `prune` deletes what the file does not declare. */
export function makePlan(config: GatewayConfig, held: HeldState, options: { prune: boolean }): Plan {
	const plan: Plan = { changes: [], unchanged: 0, warnings: [], refusals: [] };
	for (const [name, server] of Object.entries(config.servers)) {
		secretFindings(name, server.headers, plan.refusals, plan.warnings);
		plan.refusals.push(...credentialFindings(name, server.openapi));
	}
	plan.refusals.push(...referenceProblems(config, held, options.prune));
	const deletes: Change[] = [];
	for (const kind of KINDS) {
		const declared = config[kind] as Record<string, Record<string, unknown>>;
		const byName = new Map<string, HeldEntry[]>();
		for (const entry of held[kind]) byName.set(entry.name, [...(byName.get(entry.name) ?? []), entry]);
		for (const [name, raw] of Object.entries(declared)) {
			const body = withDocumentAsGiven(canonical(raw) as Record<string, unknown>, raw);
			const candidates = byName.get(name) ?? [];
			byName.delete(name);
			if (kind === "keys") {
				planKey(plan, name, body, candidates, options.prune);
				continue;
			}
			const current = candidates[0];
			const comparable = kind === "servers" ? comparableServer(name, body, current, plan.warnings) : body;
			if (!current) plan.changes.push({ kind, name, action: "create", body, diff: diffBodies({}, comparable) });
			else {
				// A document is one field of a plan, however many lines it has.
				const diff = foldDocumentChanges(diffBodies(current.body, comparable), current.body, comparable);
				if (diff.length === 0) plan.unchanged++;
				else plan.changes.push({ kind, name, action: "replace", body, diff });
			}
		}
		for (const [name, entries] of byName) {
			for (const entry of entries) {
				if (!options.prune) continue;
				const revokes = kind === "keys" ? [String(entry.meta.id)] : undefined;
				deletes.push({
					kind,
					name,
					action: "delete",
					diff: diffBodies(entry.body, {}),
					...(revokes ? { revokes } : {}),
				});
			}
		}
	}
	plan.changes.push(...deletes.reverse());
	return plan;
}

/**
 * A key declaration against the keys of that name. Keys cannot be changed in
 * place: a declaration that differs makes a new key (its secret shown once)
 * and revokes the old ones. A second key of the name is revoked under --prune.
 */
function planKey(
	plan: Plan,
	name: string,
	body: Record<string, unknown>,
	candidates: HeldEntry[],
	prune: boolean,
): void {
	const matching = candidates.find((entry) => sameValue(entry.body, body) && entry.meta.format !== "legacy");
	const others = candidates.filter((entry) => entry !== matching).map((entry) => String(entry.meta.id));
	if (matching) {
		plan.unchanged++;
		if (others.length === 0) return;
		if (prune) plan.changes.push({ kind: "keys", name, action: "delete", diff: [], revokes: others });
		else
			plan.warnings.push(
				`more than one key is named '${name}' (${others.join(", ")} beside ${matching.meta.id}); --prune revokes the others.`,
			);
		return;
	}
	const first = candidates[0];
	if (!first) plan.changes.push({ kind: "keys", name, action: "create", body, diff: diffBodies({}, body) });
	else
		plan.changes.push({
			kind: "keys",
			name,
			action: "replace",
			body,
			diff: diffBodies(first.body, body),
			revokes: others,
		});
}

/** Refuses a plan with refusals, in one message. */
export function assertApplicable(plan: Plan): void {
	if (plan.refusals.length > 0) throw new CliError(`Refusing to apply:\n  ${plan.refusals.join("\n  ")}`);
}

function shown(value: unknown): string {
	return value === undefined ? "(absent)" : JSON.stringify(value);
}

/** The plan for people: one line per change, its fields indented under it. */
export function describePlan(plan: Plan): string {
	const lines: string[] = [];
	const sign: Record<Action, string> = { create: "+", replace: "~", delete: "-" };
	for (const change of plan.changes) {
		const what = `${KIND_WORDS[change.kind]} ${change.name}`;
		let note = "";
		if (change.kind === "keys" && change.action !== "delete") note = " (a new secret, shown once";
		if (change.kind === "keys" && change.action === "replace")
			note += `; revokes ${change.revokes?.join(", ") || "the old key"}`;
		if (note) note += ")";
		if (change.kind === "keys" && change.action === "delete") note = ` (revokes ${change.revokes?.join(", ")})`;
		lines.push(`${sign[change.action]} ${change.action} ${what}${note}`);
		if (change.action === "replace") {
			for (const field of change.diff) lines.push(`    ${field.field}: ${shown(field.from)} → ${shown(field.to)}`);
		}
	}
	const counts = (action: Action) => plan.changes.filter((change) => change.action === action).length;
	lines.push(
		plan.changes.length === 0
			? `No changes: the gateway matches the file (${plan.unchanged} unchanged).`
			: `Plan: ${counts("create")} to create, ${counts("replace")} to replace, ${counts("delete")} to delete, ${plan.unchanged} unchanged.`,
	);
	for (const warning of plan.warnings) lines.push(`warning: ${warning}`);
	for (const refusal of plan.refusals) lines.push(`refused: ${refusal}`);
	return lines.join("\n");
}
