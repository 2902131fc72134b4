import type { RequestId, Tool } from "@modelcontextprotocol/sdk/types.js";
import type { Asker, GovernedServer } from "../governance/decision.ts";
import { type DecisionSource, decideListFor, decidesListFor, type ListedTools } from "../governance/decision-inputs.ts";
import { loadGuards } from "../governance/guards/guard-cache.ts";
import { type PinContext, watchedToolsReply } from "../governance/listed-tools.ts";
import { registryRecorder } from "../governance/pin-records.ts";
import { type CompiledPolicies, policyPrincipal } from "../governance/policies.ts";
import { loadPolicies } from "../governance/policy-cache.ts";
import { endpointToolView, exposedToolName } from "../governance/tool-shaping.ts";
import type { RequestOf } from "../mcp/client-message.ts";
import { describeError } from "../mcp/gateway-error.ts";
import { LIST_KIND_OF_METHOD, LIST_KINDS, type ListItems, type ListKind } from "../mcp/list-kinds.ts";
import type { TOOLS_LIST } from "../mcp/methods.ts";
import type { GuardRecord, GuardWebhook } from "../registry/guard-records.ts";
import type { RegistryReader } from "../registry/registry-reader.ts";
import { type Telemetry, telemetryFor } from "../telemetry/telemetry.ts";
import { postReferencedWebhook } from "../upstream/webhook-post.ts";
import { withTaskSupport } from "./2025-11-25/task-wire.ts";
import type { Catalog } from "./aggregate/catalog.ts";
import type { MemberLists } from "./aggregate/member-lists.ts";
import type { MemberSessions } from "./aggregate/member-sessions.ts";
import type { Member } from "./binding.ts";
import type { SessionState } from "./session-state.ts";
import type { UpstreamPool } from "./upstream-pool.ts";

/**
 * The governance decision as a session makes it (src/governance/decision.ts):
 * what it reads here — the session's catalog, its caller, its clock, the
 * policies and pins of the isolate's caches — and where the session applies
 * it: the lists it serves, a transparent list it answers itself, and a
 * passthrough tools list it watches beside the client. A call is decided in
 * `UpstreamCalls.request`, over this same source.
 */
export class SessionDecisions implements DecisionSource {
	readonly pins: PinContext;
	readonly telemetry: Telemetry;
	private readonly reader: RegistryReader;

	constructor(
		private readonly state: SessionState,
		private readonly members: MemberSessions,
		private readonly pool: UpstreamPool,
		private readonly catalog: Catalog,
		private readonly lists: MemberLists,
	) {
		const { env, settings } = state;
		this.reader = state.reader;
		this.pins = {
			reader: this.reader,
			registry: registryRecorder(env),
			ttlMs: settings.endpointCacheTtlMs,
			waitUntil: (promise) => state.waitUntil(promise),
		};
		this.telemetry = telemetryFor(env);
	}

	policies(): Promise<CompiledPolicies> {
		return loadPolicies(this.reader, this.state.settings.endpointCacheTtlMs);
	}

	guardWebhook(webhook: GuardWebhook, body: string): Promise<Response> {
		return postReferencedWebhook(webhook, this.state.env, body);
	}

	guards(): Promise<readonly GuardRecord[]> {
		return loadGuards(this.reader, this.state.settings.endpointCacheTtlMs);
	}

	asker(): Asker {
		const binding = this.state.binding;
		return {
			principal: policyPrincipal(
				binding?.keyId ?? "",
				binding?.caller?.caller.identity ?? null,
				binding?.caller?.caller.keyName ?? null,
			),
			virtualServer: binding?.endpointCheck.kind === "virtual" ? binding.endpointCheck.name : null,
			endpointTools: binding?.endpointTools ?? undefined,
			now: this.state.clock.now(),
		};
	}

	async tools(server: GovernedServer): Promise<ListedTools> {
		const shaped = await this.catalog.get(server.name, "tools").catch((error: unknown) => {
			console.warn(`member ${server.name}: its tools are unknown to the decision on a call (${describeError(error)})`);
			return [];
		});
		return { shaped, upstream: this.lists.upstreamToolsOf(server.name) };
	}

	/** What of a member's shaped list this caller may see: tools the pins hold or the policies hide are left out. */
	async visible<K extends ListKind>(server: string, kind: K, items: Array<ListItems[K]>): Promise<Array<ListItems[K]>> {
		const member = this.members.member(server);
		const listed = await decideListFor(this, member, kind, items, this.lists.upstreamToolsOf(server));
		if (kind !== "tools") return listed;
		// Every tools list a session serves passes here: a client it holds tasks for sees which tools it may call as tasks.
		// Tools lists hold tools (parsed with the SDK's schema by `listAll`).
		return (this.state.holdsTasks() ? (listed as Tool[]).map(withTaskSupport) : listed) as Array<ListItems[K]>;
	}

	/**
	 * The list a transparent session answers itself rather than pass on, if
	 * `method` is one: one the governance decision makes (see `reachOf`), and
	 * tools for a client the session holds tasks for.
	 */
	async listAnsweredHere(member: Member, method: string): Promise<ListKind | null> {
		const kind = LIST_KIND_OF_METHOD.get(method);
		if (kind === undefined) return null;
		// A client the session holds tasks for sees each tool's task support as the gateway honours it.
		if (kind === "tools" && this.state.holdsTasks()) return kind;
		return (await decidesListFor(this, member, kind)) ? kind : null;
	}

	/**
	 * A transparent session's answer to a list it makes itself: fetched afresh,
	 * as the upstream's own list would be (its list_changed reached the client
	 * directly), then shaped and filtered, all in one page.
	 */
	async answerList(member: Member, kind: ListKind, id: RequestId): Promise<Response> {
		this.catalog.invalidate(member.name, [kind]);
		const items = await this.visible(member.name, kind, await this.catalog.get(member.name, kind));
		return Response.json({ jsonrpc: "2.0", id, result: { [LIST_KINDS[kind].field]: items } });
	}

	/** A transparent tools/list reply passed on as it came, its tools checked against the pins beside the client. */
	watchedToolsReply(member: Member, request: RequestOf<typeof TOOLS_LIST>, reply: Response): Response {
		return watchedToolsReply(this.pins, member, request, reply, this.pool.connection(member).maxReplyBytes);
	}

	/**
	 * Whether the member lists tool `name` (the upstream's) as read-only: the
	 * catalog holds the shaped tools, annotations the operator added included,
	 * and a virtual server's operator may add theirs over them.
	 */
	async isReadOnlyTool(member: Member, name: string): Promise<boolean> {
		const exposed = exposedToolName(member.tools ?? undefined, name);
		const endpointTools = this.state.binding?.endpointTools ?? undefined;
		return (await this.catalog.get(member.name, "tools")).some(
			(tool) =>
				tool.name === exposed &&
				endpointToolView(endpointTools, member.name, exposed, tool.annotations).annotations.readOnlyHint === true,
		);
	}
}
