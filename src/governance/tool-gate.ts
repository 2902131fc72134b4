import type { Tool } from "@modelcontextprotocol/sdk/types.js";
import { GatewayError } from "../mcp/gateway-error.ts";
import { type Identity, parsePrincipalId } from "../registry/access-rules.ts";
import { type CompiledPolicies, type PolicyPrincipal, type PolicyTool, policyVerdict } from "./policies.ts";

/**
 * The one decision on a caller and a tool, for lists and calls alike
 * (invariant "What a caller may not call, it does not see"): the operator's
 * shaping has already given the tool its shaped form; the policies then say
 * whether this caller sees it (`tools/list`) or may call it with these
 * arguments (`tools/call`). A tool a list leaves out is refused on call by the
 * same policies, so nothing hidden can be called by its name.
 */
export interface ToolGate {
	policies: CompiledPolicies;
	principal: PolicyPrincipal;
	/** The virtual server the session is on; null on `/mcp/<server>` and `/mcp`. */
	virtualServer: string | null;
	now: number;
}

/** The principal a policy sees, from what the session keeps of its caller. */
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

/** Whether any policy could apply to `server` at all (else lists pass through untouched). */
export function governs(policies: CompiledPolicies, server: string): boolean {
	return policies.policies.some(
		(policy) => policy.applies === null || policy.applies.servers?.includes(server) !== false,
	);
}

/** The tools of `server` the caller may see, of its shaped list (`view` gives each one as the caller sees it). */
export function visibleTools(
	gate: ToolGate,
	server: string,
	tools: readonly Tool[],
	view: (tool: Tool) => PolicyTool,
): Tool[] {
	if (gate.policies.policies.length === 0) return [...tools];
	return tools.filter(
		(tool) =>
			policyVerdict(gate.policies, {
				principal: gate.principal,
				server,
				virtualServer: gate.virtualServer,
				tool: view(tool),
				method: "tools/list",
				now: gate.now,
			}).allowed,
	);
}

/**
 * Whether the caller may call the tool with these arguments: null when it
 * may, else the refusal, a JSON-RPC error whose sentence names the policy
 * (never its expression).
 */
export function callRefusal(
	gate: ToolGate,
	server: string,
	tool: { name: string; realName: string; annotations: Record<string, unknown> },
	args: Record<string, unknown>,
): GatewayError | null {
	if (gate.policies.policies.length === 0) return null;
	const verdict = policyVerdict(gate.policies, {
		principal: gate.principal,
		server,
		virtualServer: gate.virtualServer,
		tool,
		arguments: args,
		method: "tools/call",
		now: gate.now,
	});
	if (verdict.allowed) return null;
	return new GatewayError(
		"forbidden",
		`The gateway's policy '${verdict.policy}' does not allow this call of '${tool.name}'; ask its operator.`,
		{ server, status: 200, code: -32602 },
	);
}
