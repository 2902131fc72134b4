import type { CelInput } from "@bufbuild/cel";
import { isCelError } from "@bufbuild/cel";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { type Identity, parsePrincipalId } from "../registry/access-rules.ts";
import {
	DEFAULT_APPROVAL_TIMEOUT_SECONDS,
	orderPolicies,
	type PolicyApplies,
	type PolicyRecord,
} from "../registry/policy-records.ts";
import { type CelBindings, type CelProgram, type Compiled, compileExpression } from "./cel-program.ts";

/**
 * Tool policies: CEL expressions that allow or deny a caller a tool, on lists
 * (what the caller sees) and on calls, or have the caller confirm a call. Compiled once per published list and
 * kept per isolate; evaluated per tool with one activation per verdict.
 *
 * The rule: a policy applies where its `applies` matches (absent: everywhere).
 * No applicable policy: allowed (the gateway's behaviour without policies).
 * An applicable `deny` that is true denies; if any applicable `allow` exists,
 * at least one must be true. A `confirm` that is true lets an allowed call
 * through only once the caller confirms it (deny > confirm > allow: a deny
 * that holds refuses without asking; decision 0110); it neither hides a tool
 * from lists nor counts as an `allow`. An `approve` that is true holds the
 * call until an approver decides (deny > approve > confirm > allow: an
 * approver's yes is the stronger check, so a call both would hold waits for
 * the approver and the caller is not asked as well; decision 0117). An expression that cannot be evaluated (an error,
 * or not a boolean) denies and logs a line naming the policy, never a value.
 * Policies are evaluated by priority, then name, so the policy a refusal
 * names is always the same one.
 */

/** Who calls, as a policy sees them (`principal`). A type, not an interface, so that it is a CEL map as it is. */
export type PolicyPrincipal = {
	kind: "key" | "person";
	/** The key id, or the person's principal id (`oauth~...`). */
	id: string;
	/** A person's `sub`; null for a key. */
	subject: string | null;
	/** A person's verified email, lowercased; null when there is none or it is not verified. */
	email: string | null;
	groups: readonly string[];
	/** The access rule that admitted a person; null for a key. */
	rule: string | null;
	/** A key's name; null for a person, or a key made without one. */
	keyName: string | null;
};

/** The principal a policy sees, from what the edge or the session keeps of its caller. */
export function policyPrincipal(
	principalId: string,
	identity: Identity | null,
	keyName: string | null,
): PolicyPrincipal {
	const ref = parsePrincipalId(principalId);
	if (ref) {
		return {
			kind: "person",
			id: principalId,
			subject: identity?.subject ?? null,
			email: identity?.email ?? null,
			groups: identity?.groups ?? [],
			rule: ref.rule,
			keyName: null,
		};
	}
	return { kind: "key", id: principalId, subject: null, email: null, groups: [], rule: null, keyName };
}

/** The tool a request lists or calls (`tool`), as the caller sees it after shaping. */
export interface PolicyTool {
	/** The name the caller sees (an alias, where shaping gave one), without the aggregate's `server__` prefix. */
	name: string;
	/** The upstream's own name. */
	realName: string;
	/** As shaped; the standard hints missing here are given MCP's defaults (see `HINT_DEFAULTS`). */
	annotations: Readonly<Record<string, unknown>>;
}

export interface PolicyRequest {
	principal: PolicyPrincipal;
	/** The server the tool belongs to. */
	server: string;
	/** The virtual server the request came through; null on `/mcp/<server>` and `/mcp`. */
	virtualServer: string | null;
	tool: PolicyTool;
	/** A call's arguments, as parsed from JSON; absent on lists (an empty map). */
	arguments?: Readonly<Record<string, unknown>> | undefined;
	method: string;
	/** Now, in milliseconds since the epoch, from the caller's clock (tests inject theirs): `request.time`. */
	now: number;
}

/**
 * Allowed (`approve`: the first policy, in evaluation order, that has an
 * approver decide the call, and how long it waits; else `confirm`: the first
 * that has the caller confirm it), or refused by `policy`.
 */
export type PolicyVerdict =
	| { readonly allowed: true; readonly confirm?: string; readonly approve?: ApprovalHold }
	| { readonly allowed: false; readonly policy: string };

/** An `approve` policy's hold: its name, how long the call waits for an approver, and where approvers are told (absent: nowhere). */
export interface ApprovalHold {
	readonly policy: string;
	readonly timeoutMs: number;
	readonly webhook?: PolicyWebhook;
}

/** A policy's approval webhook as the registry keeps it: the URL and a `${UPSTREAM_NAME}` reference to its secret. */
export type PolicyWebhook = NonNullable<PolicyRecord["approvalWebhook"]>;

interface CompiledPolicy {
	readonly name: string;
	readonly effect: PolicyRecord["effect"];
	/** For `approve`: the hold it makes (its wait, its webhook), made once. */
	readonly hold: ApprovalHold;
	readonly applies: PolicyApplies | null;
	readonly compiled: Compiled;
	/** This policy's refusal, made once. */
	readonly denial: PolicyVerdict;
}

/** Policies ready to evaluate, in evaluation order. Opaque: made by `compilePolicies`. */
export interface CompiledPolicies {
	readonly policies: readonly CompiledPolicy[];
	/** Evaluation failures already logged (policy, server, tool and reason), so a list of tools logs each once. */
	readonly logged: Set<string>;
}

/** No policy at all: what a decision that reads none is given (policies speak of tools, not of prompts or resources). */
export const NO_POLICIES: CompiledPolicies = Object.freeze({ policies: [], logged: new Set<string>() });

const ALLOWED: PolicyVerdict = Object.freeze({ allowed: true });
const EMPTY_ARGUMENTS: Readonly<Record<string, unknown>> = Object.freeze({});

/**
 * MCP's defaults for the standard hints (schema: "default: false" for
 * read-only and idempotent, "default: true" for destructive and open-world),
 * so `tool.annotations.readOnlyHint` always has a value a policy can test.
 */
const HINT_DEFAULTS = { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true };
const HINTS = Object.keys(HINT_DEFAULTS);

/** Failures logged at most this many times per compiled list. */
const MAX_LOGGED = 1_000;

/** One compiled set per published list: the reader's cache hands out the same array while it is fresh. */
const byRecords = new WeakMap<readonly PolicyRecord[], CompiledPolicies>();
/** Programs by expression, so a list published again recompiles only what changed. */
const byExpression = new Map<string, Compiled>();
const MAX_PROGRAMS = 512;

/**
 * Compiles a published policy list, once per list (kept per isolate). Never
 * throws: a record that does not compile here (published by another
 * version, say) denies wherever it applies, with a log line.
 */
export function compilePolicies(records: readonly PolicyRecord[]): CompiledPolicies {
	const known = byRecords.get(records);
	if (known) return known;
	const policies = orderPolicies(records).map(
		(record): CompiledPolicy => ({
			name: record.name,
			effect: record.effect,
			hold: holdOf(record),
			applies: record.applies,
			compiled: programFor(record.expression),
			denial: Object.freeze({ allowed: false, policy: record.name }),
		}),
	);
	const compiled: CompiledPolicies = { policies, logged: new Set() };
	byRecords.set(records, compiled);
	return compiled;
}

function holdOf(record: PolicyRecord): ApprovalHold {
	const timeoutMs = (record.approvalTimeoutSeconds ?? DEFAULT_APPROVAL_TIMEOUT_SECONDS) * 1_000;
	const webhook = record.approvalWebhook ?? undefined;
	return Object.freeze(
		webhook === undefined ? { policy: record.name, timeoutMs } : { policy: record.name, timeoutMs, webhook },
	);
}

function programFor(expression: string): Compiled {
	const known = byExpression.get(expression);
	if (known) return known;
	const compiled = compileExpression(expression);
	if (byExpression.size >= MAX_PROGRAMS) byExpression.clear();
	byExpression.set(expression, compiled);
	return compiled;
}

/** Whether the request may list or call the tool, and if not, which policy says no. */
export function policyVerdict(compiled: CompiledPolicies, input: PolicyRequest): PolicyVerdict {
	let bindings: CelBindings | undefined;
	let firstAllow: CompiledPolicy | undefined;
	let confirmBy: CompiledPolicy | undefined;
	let approveBy: CompiledPolicy | undefined;
	let allowed = false;
	for (const policy of compiled.policies) {
		if (!appliesTo(policy.applies, input)) continue;
		bindings ??= bindingsOf(input);
		const outcome = evaluate(policy, bindings);
		if (typeof outcome === "string") {
			logFailure(compiled, policy, input, outcome);
			return policy.denial;
		}
		if (policy.effect === "deny") {
			if (outcome) return policy.denial;
		} else if (policy.effect === "confirm") {
			if (outcome) confirmBy ??= policy;
		} else if (policy.effect === "approve") {
			if (outcome) approveBy ??= policy;
		} else {
			firstAllow ??= policy;
			if (outcome) allowed = true;
		}
	}
	if (firstAllow && !allowed) return firstAllow.denial;
	if (approveBy) return { allowed: true, approve: approveBy.hold };
	return confirmBy ? { allowed: true, confirm: confirmBy.name } : ALLOWED;
}

/** Every list `applies` gives must name the request's server, virtual server, key or rule (content guards use it too). */
export function appliesTo(
	applies: PolicyApplies | null,
	input: Pick<PolicyRequest, "principal" | "server" | "virtualServer">,
): boolean {
	if (applies === null) return true;
	const { principal } = input;
	if (applies.servers && !applies.servers.includes(input.server)) return false;
	if (applies.virtualServers && (input.virtualServer === null || !applies.virtualServers.includes(input.virtualServer)))
		return false;
	if (applies.keys && (principal.kind !== "key" || !applies.keys.includes(principal.id))) return false;
	if (applies.rules && (principal.rule === null || !applies.rules.includes(principal.rule))) return false;
	return true;
}

/** true or false, or why the expression gave neither (no value of the request in it). */
function evaluate(policy: CompiledPolicy, bindings: CelBindings): boolean | string {
	if (!policy.compiled.ok) return `it does not compile: ${policy.compiled.message}`;
	const program: CelProgram = policy.compiled.program;
	const result = program(bindings);
	if (typeof result === "boolean") return result;
	if (isCelError(result)) return errorKind(result.message);
	return "it did not evaluate to true or false";
}

/**
 * The kind of a CEL error without its details: "field not found: repo" is
 * "field not found". Details may quote a caller's argument.
 */
function errorKind(message: string): string {
	const kind = message.split(":", 1)[0]?.trim() ?? "";
	return kind.length > 0 && kind.length <= 60 && /^[a-z _]+$/i.test(kind) ? kind : "an evaluation error";
}

function logFailure(compiled: CompiledPolicies, policy: CompiledPolicy, input: PolicyRequest, reason: string): void {
	const key = `${policy.name} ${input.server} ${input.tool.name} ${reason}`;
	if (compiled.logged.has(key) || compiled.logged.size >= MAX_LOGGED) return;
	compiled.logged.add(key);
	console.warn(
		`governance: policy '${policy.name}' could not be evaluated for ${input.method} of tool '${input.tool.name}' on '${input.server}' (${reason}); the tool is denied`,
	);
}

/** The activation: one per verdict, shared by every policy evaluated for it. */
function bindingsOf(input: PolicyRequest): CelBindings {
	return {
		principal: input.principal,
		server: input.server,
		tool: {
			name: input.tool.name,
			realName: input.tool.realName,
			annotations: jsonAsCel(withHintDefaults(input.tool.annotations)),
		},
		arguments: jsonAsCel(input.arguments ?? EMPTY_ARGUMENTS),
		method: input.method,
		request: { time: timestampFromMs(input.now) },
	};
}

function withHintDefaults(annotations: Readonly<Record<string, unknown>>): Readonly<Record<string, unknown>> {
	return HINTS.every((hint) => Object.hasOwn(annotations, hint)) ? annotations : { ...HINT_DEFAULTS, ...annotations };
}

/**
 * JSON (arguments as parsed from a request body, annotations as parsed from
 * an upstream's list) is a CEL input as it is: null, booleans, numbers
 * (doubles), strings, arrays and objects (maps). Nothing is copied.
 */
function jsonAsCel(value: Readonly<Record<string, unknown>>): CelInput {
	return value as CelInput;
}
