import {
	type InitializeRequest,
	type InitializeResult,
	type JSONRPCMessage,
	type JSONRPCRequest,
	LATEST_PROTOCOL_VERSION,
} from "@modelcontextprotocol/sdk/types.js";
import { isNoConnectorOnline } from "../connectors/connector-refusal.ts";
import { aggregateCapabilities, aggregateInstructions, GATEWAY_SERVER_INFO } from "../mcp/aggregate.ts";
import { describeError, GatewayError } from "../mcp/gateway-error.ts";
import { isSupportedLegacyVersion } from "../mcp/protocol-version.ts";
import type { Disclosure } from "../registry/disclosure-schema.ts";
import type { PromptShaping, ResourceShaping } from "../registry/offer-shaping-schema.ts";
import type { EndpointTools } from "../registry/tool-shaping-schema.ts";
import { forEachBounded } from "./aggregate/bounded.ts";
import type { EndpointCheck, Member, SessionBinding, SessionScope } from "./binding.ts";
import type { MemberHello, UpstreamPool } from "./upstream-pool.ts";

/** What the edge hands over when a client initializes. */
export interface OpenSessionInput {
	scope: SessionScope;
	request: JSONRPCRequest;
	params: InitializeRequest["params"];
	mode: SessionBinding["mode"];
	endpointCheck: EndpointCheck;
	members: Member[];
	/** A virtual server's choice of its members' tools (kept in the binding). */
	endpointTools?: EndpointTools | null | undefined;
	/** A virtual server's choice of its members' prompts and resources (kept in the binding). */
	endpointPrompts?: PromptShaping | null | undefined;
	endpointResources?: ResourceShaping | null | undefined;
	/** How an aggregate discloses its tools (kept in the binding); absent: in full. */
	disclosure?: Disclosure | undefined;
}

/** A binding before the DO stamps it with its times. */
export type BindingDraft = Omit<SessionBinding, "createdAt" | "lastActivity" | "verifiedAt">;

/** The outcome of an initialize: the reply for the client, and a binding when a session opened. */
export interface Opened {
	binding?: BindingDraft;
	reply: JSONRPCMessage;
}

/**
 * The initialize params the gateway sends to an aggregate's members: the
 * client's own capabilities, since members' requests to the client (sampling,
 * elicitation, roots) are routed back to it.
 */
export function memberInitParams(
	version: string,
	clientInfo: InitializeRequest["params"]["clientInfo"],
	capabilities: InitializeRequest["params"]["capabilities"],
) {
	return { protocolVersion: version, capabilities, clientInfo };
}

/**
 * A transparent session: the client's initialize goes to the upstream as it
 * is, and the upstream's reply (result or refusal) comes back unchanged.
 */
export async function openTransparent(pool: UpstreamPool, input: OpenSessionInput): Promise<Opened> {
	const member = input.members[0];
	if (!member) throw new GatewayError("internal", "A transparent session needs exactly one upstream server.");
	const opened = await pool.connection(member).initialize({ message: input.request, params: input.params });
	if (!opened.session) return { reply: opened.reply };
	return {
		binding: draft(input, opened.session.protocolVersion, { [member.name]: opened.session }),
		reply: opened.reply,
	};
}

/**
 * An aggregate session: every member is initialized (at most six at a time).
 * A member that fails is left out for now and connected on its next use; the
 * session opens anyway, with the gateway's own initialize result.
 */
export async function openAggregate(pool: UpstreamPool, input: OpenSessionInput): Promise<Opened> {
	const version = isSupportedLegacyVersion(input.params.protocolVersion)
		? input.params.protocolVersion
		: LATEST_PROTOCOL_VERSION;
	const params = memberInitParams(version, input.params.clientInfo, input.params.capabilities);
	const hellos = new Map<string, MemberHello>();
	const unconnected: string[] = [];
	const offline: string[] = [];
	await forEachBounded(input.members, async (member) => {
		try {
			hellos.set(member.name, await pool.open(member, params));
		} catch (error) {
			// A server that acts with the person's own account they have not connected contributes
			// nothing until they do; the instructions say where.
			if (error instanceof GatewayError && error.kind === "connection_required") unconnected.push(member.name);
			else if (isNoConnectorOnline(error)) offline.push(member.name);
			else console.warn(`member ${member.name} unavailable at initialize: ${describeError(error)}`);
		}
	});
	const answered = input.members.flatMap((member) => {
		const hello = hellos.get(member.name);
		return hello ? [{ member, hello }] : [];
	});
	const result: InitializeResult = {
		protocolVersion: version,
		capabilities: aggregateCapabilities(answered.map(({ hello }) => hello.result.capabilities)),
		serverInfo: GATEWAY_SERVER_INFO,
	};
	const instructions = aggregateInstructions([
		...connectionsNeeded(unconnected, input.scope.calling?.origin),
		...connectorsOffline(offline),
		...answered.map(({ member, hello }) => ({
			server: member.name,
			instructions: hello.result.instructions,
		})),
	]);
	if (instructions) result.instructions = instructions;
	const upstreams = Object.fromEntries(answered.map(({ member, hello }) => [member.name, hello.session]));
	return { binding: draft(input, version, upstreams), reply: { jsonrpc: "2.0", id: input.request.id, result } };
}

/** What the client's model is told of servers the person has not connected: their names and the page. */
function connectionsNeeded(servers: readonly string[], origin: string | undefined) {
	if (servers.length === 0) return [];
	const where = origin ? `${origin}/connections` : "the gateway's /connections page";
	return [
		{
			server: "connections",
			instructions: `These servers act with your own account there, which you have not connected yet, so their tools are not listed: ${[...servers].sort().join(", ")}. Connect them at ${where}; their tools then appear.`,
		},
	];
}

/** What the client's model is told of connector servers with no connector online: they are left out for now. */
function connectorsOffline(servers: readonly string[]) {
	if (servers.length === 0) return [];
	return [
		{
			server: "connectors",
			instructions: `No connector is online for these servers, so their tools are not listed: ${[...servers].sort().join(", ")}. They are reached through connectors that run next to them; their tools appear once one connects.`,
		},
	];
}

function draft(input: OpenSessionInput, protocolVersion: string, upstreams: SessionBinding["upstreams"]): BindingDraft {
	const { keyId, userPath, endpoint, calling } = input.scope;
	return {
		keyId,
		userPath,
		endpoint,
		// The caller as the session keeps it: never the exchangeable token.
		...(calling ? { caller: { caller: calling.caller, origin: calling.origin } } : {}),
		mode: input.mode,
		endpointCheck: input.endpointCheck,
		protocolVersion,
		clientCapabilities: input.params.capabilities,
		clientInfo: input.params.clientInfo,
		members: input.members,
		...(input.endpointTools ? { endpointTools: input.endpointTools } : {}),
		...(input.endpointPrompts ? { endpointPrompts: input.endpointPrompts } : {}),
		...(input.endpointResources ? { endpointResources: input.endpointResources } : {}),
		// Only an aggregate searches; a binding without the field lists in full, as older ones did.
		...(input.mode === "aggregate" && input.disclosure !== undefined && input.disclosure.mode !== "full"
			? { disclosure: input.disclosure }
			: {}),
		upstreams,
	};
}
