import type { CallToolResult, Tool } from "@modelcontextprotocol/sdk/types.js";
import { MAX_TOOLS_DESCRIBED, signatureOf, typedApi } from "../../codemode/tool-types.ts";
import { globMatches } from "../../governance/globs.ts";
import { isAppOnly } from "../../mcp/app-visibility.ts";
import type { SessionRequest, ToolCall } from "../../mcp/client-message.ts";
import { EXECUTE_CODE, executeCodeTool } from "../../mcp/code-tools.ts";
import {
	CALL_TOOL,
	CALL_TOOL_TOOL,
	callArgumentsOf,
	innerCall,
	SEARCH_TOOLS,
	SEARCH_TOOLS_TOOL,
	searchArgumentsOf,
	searchResult,
} from "../../mcp/disclosure-tools.ts";
import { TOOLS_CALL } from "../../mcp/methods.ts";
import { buildToolIndex, searchTools, type ToolIndex } from "../../mcp/tool-search.ts";
import { unknownName } from "../../mcp/unknown-offers.ts";
import type { Disclosure } from "../../registry/disclosure-schema.ts";
import { withTaskSupport } from "../2025-11-25/task-wire.ts";

/** The aggregate's tools as the caller may call them now, and the generation of that list. */
export interface CallableTools {
	tools: Tool[];
	/** Changes whenever the list the caller may call changed (see AggregateLists.toolsGeneration). */
	generation: number;
}

/** What the disclosure needs from its session. */
export interface DisclosureHost {
	/** The endpoint's disclosure as at open; undefined: in full. */
	disclosure(): Disclosure | undefined;
	/** Every tool the caller may call, as the endpoint names them: shaping, policies and pinning applied. */
	callable(): Promise<CallableTools>;
	/** Whether the session holds tasks for its client: `call_tool` then takes a task, as the tool it calls would. */
	holdsTasks(): boolean;
}

/**
 * An aggregate's tools in search mode (docs/tool-search.md): `tools/list`
 * answers the gateway's `search_tools` and `call_tool` and the tools the
 * operator always lists; `search_tools` ranks what the caller may call (the
 * same list `tools/list` would give in full, so a hidden tool is never found);
 * `call_tool` becomes the call of the tool it names, which then goes the way
 * a direct call goes. One index per session object, built from the list of
 * one generation and rebuilt once that list changes (a list_changed refresh,
 * a policy that now decides otherwise), never per request.
 *
 * All three build what the model sees, so none offers a tool that is for an
 * MCP App's View only (`_meta.ui.visibility` of "app" without "model",
 * docs/apps.md): it is not listed, not found, and `call_tool` refuses it as
 * an unknown name. A direct `tools/call` of it, what a host forwards from
 * the View, is not a model's and goes on as before.
 */
export class ToolDisclosure {
	private built: { generation: number; index: ToolIndex } | null = null;

	constructor(
		private readonly host: DisclosureHost,
		/** Swapped for a counting builder in tests. */
		private readonly build: (tools: readonly Tool[]) => ToolIndex = buildToolIndex,
	) {}

	/** Whether the endpoint lists the gateway's own tools instead of its tools: search mode or code mode. */
	get searching(): boolean {
		const mode = this.host.disclosure()?.mode;
		return mode === "search" || mode === "code";
	}

	/** Whether the endpoint is in code mode (docs/code-mode.md). */
	get coding(): boolean {
		return this.host.disclosure()?.mode === "code";
	}

	/**
	 * `tools/list` in search mode: the gateway's two tools, then those `alwaysList` names, in endpoint order.
	 * In code mode `execute_code` stands where `call_tool` would, with the typed API of a small catalog.
	 */
	async list(): Promise<Tool[]> {
		const globs = this.host.disclosure()?.alwaysList ?? [];
		const always =
			globs.length === 0
				? []
				: (await this.host.callable()).tools.filter(
						(tool) => !isAppOnly(tool) && globs.some((glob) => globMatches(glob, tool.name)),
					);
		if (this.coding) {
			// A program may run long: a client that holds tasks may have it held as one, as any call.
			const execute = await this.executeCode();
			return [SEARCH_TOOLS_TOOL, this.host.holdsTasks() ? withTaskSupport(execute) : execute, ...always];
		}
		const call = this.host.holdsTasks() ? withTaskSupport(CALL_TOOL_TOOL) : CALL_TOOL_TOOL;
		return [SEARCH_TOOLS_TOOL, call, ...always];
	}

	/** Whether a call is the gateway's own `execute_code` (code mode), run by the session. */
	isExecute(request: SessionRequest): request is ToolCall {
		return this.coding && request.method === TOOLS_CALL && request.message.params.name === EXECUTE_CODE;
	}

	/** The names of the tools the caller may call, as the endpoint gives them (a program's calls are resolved against them). */
	async callableNames(): Promise<string[]> {
		return (await this.host.callable()).tools.map((tool) => tool.name);
	}

	private async executeCode(): Promise<Tool> {
		const tools = (await this.host.callable()).tools.filter((tool) => !isAppOnly(tool));
		return executeCodeTool(tools.length <= MAX_TOOLS_DESCRIBED ? typedApi(tools) : null);
	}

	/** Whether a call is the gateway's own `search_tools`, answered here. */
	isSearch(call: ToolCall): boolean {
		return this.searching && call.message.params.name === SEARCH_TOOLS;
	}

	/** `search_tools`: the best matches among the tools the caller may call. Bad arguments throw invalid params. */
	async search(call: ToolCall): Promise<CallToolResult> {
		const { query, limit } = searchArgumentsOf(call);
		const found = searchTools(await this.index(), query, limit);
		return this.coding ? searchResult(found, signatureOf) : searchResult(found);
	}

	/**
	 * The call a `call_tool` stands for (the named tool, its arguments, the same
	 * id, `_meta` and task), or null for any other request. Bad arguments throw
	 * invalid params; an unknown or hidden name is refused later, where a direct
	 * call of it is, exactly as one.
	 */
	inner(request: SessionRequest): ToolCall | null {
		if (this.host.disclosure()?.mode !== "search") return null;
		if (request.method !== TOOLS_CALL || request.message.params.name !== CALL_TOOL) return null;
		return innerCall(request, callArgumentsOf(request));
	}

	/**
	 * Refuses the call a `call_tool` stands for when its tool is for a View
	 * only, with the words an unknown name gets, before anything is sent. Any
	 * other name goes on, to be routed (or refused) as a direct call is.
	 */
	async refuseAppOnly(inner: ToolCall): Promise<void> {
		const { name } = inner.message.params;
		const named = (await this.host.callable()).tools.find((tool) => tool.name === name);
		if (named !== undefined && isAppOnly(named)) throw unknownName("tool", name);
	}

	private async index(): Promise<ToolIndex> {
		const { tools, generation } = await this.host.callable();
		if (this.built?.generation !== generation) {
			this.built = { generation, index: this.build(tools.filter((tool) => !isAppOnly(tool))) };
		}
		return this.built.index;
	}
}
