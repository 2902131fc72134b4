import { settingsFrom } from "../config.ts";
import type { Env } from "../env.ts";
import { type ApprovalPlan, pinReport, planApproval, type ToolReport } from "../governance/pin-report.ts";
import { pinInputOf, type ToolLike } from "../governance/tool-digest.ts";
import { GatewayError } from "../mcp/gateway-error.ts";
import { registryStub } from "../registry/registry-stub.ts";
import type { ServerRecord } from "../registry/schemas.ts";
import { ObservedToolsSchema, type ServerPins, type ToolApprovalInput } from "../registry/tool-pins.ts";
import { targetLimitsOf, targetOrProblem } from "../upstream/upstream-target.ts";
import { listUpstreamTools } from "../upstream/upstream-tools.ts";
import { noneNamed } from "./admin/none-named.ts";

/**
 * The admin API's view of a server's tools against its pins, and approvals
 * (`GET /admin/servers/:name/tools`, `POST /admin/servers/:name/tools/approve`).
 * The current list is fetched with the admin's own connection, as the server
 * check is made: with the server's configured headers, never a person's. A
 * server whose requests carry each caller's credentials cannot be listed so:
 * for it, the current list is the one its callers' sessions last saw
 * (reported to the registry when something in it was not as approved).
 */

/** Auth modes whose requests carry the caller's own credentials: the admin has none to list with. */
const NEEDS_A_CALLER = new Set<ServerRecord["auth"]["type"]>(["oauth", "identity", "token-exchange"]);

/** The server's tools now, and when they were seen (absent: just now); or why they are not known (a sentence naming no value). */
async function currentTools(env: Env, server: ServerRecord): Promise<{ tools: ToolLike[]; observedAt?: string }> {
	if (NEEDS_A_CALLER.has(server.auth.type)) {
		// Parsed: definitions (objects of anything) are not in the RPC stub's types.
		const observed = ObservedToolsSchema.nullable().parse(await registryStub(env).observedTools(server.name));
		if (observed) {
			return {
				tools: observed.tools.map((tool) => tool.definition),
				observedAt: new Date(observed.observedAt).toISOString(),
			};
		}
		throw new GatewayError(
			"conflict",
			`Conflict: '${server.name}' needs a caller: its requests carry each person's own credentials (auth "${server.auth.type}"), so the admin cannot list its tools, and no session has listed them yet; only its pins are known here.`,
			{ server: server.name },
		);
	}
	const resolved = targetOrProblem(server, env, targetLimitsOf(settingsFrom(env)));
	if ("problem" in resolved) {
		throw new GatewayError("misconfigured", `'${server.name}' cannot be asked: ${resolved.problem}.`, {
			server: server.name,
		});
	}
	return { tools: await listUpstreamTools(resolved.target, server.protocol) };
}

async function serverNamed(env: Env, name: string): Promise<ServerRecord> {
	const server = await registryStub(env).getServer(name);
	if (!server) throw await noneNamed(env, "servers", name);
	return server;
}

/** What the tools view answers. `unlisted`: why the current list is not in it (then only pins are shown). */
interface ToolsView {
	server: string;
	pinning: ServerRecord["pinning"];
	/** Whether the server's tools were ever recorded (first seen or approved). */
	recorded: boolean;
	unlisted?: string;
	/** The states are of the list callers' sessions last saw, at this time (a server that needs a caller). */
	observedAt?: string;
	tools: ToolReport[];
}

type Current = Awaited<ReturnType<typeof currentTools>>;

async function viewOf(server: ServerRecord, pins: ServerPins | null, current: Current | null, unlisted?: string) {
	const view: ToolsView = {
		server: server.name,
		pinning: server.pinning,
		recorded: pins !== null,
		tools: await pinReport(pins, current?.tools ?? null),
	};
	if (unlisted !== undefined) view.unlisted = unlisted;
	if (current?.observedAt !== undefined) view.observedAt = current.observedAt;
	return view;
}

/** Each tool's state from the pins and the list now (or last observed); pins only when neither is known. */
export async function toolsView(env: Env, name: string): Promise<ToolsView> {
	const server = await serverNamed(env, name);
	const pins = await registryStub(env).serverPins(name);
	try {
		return await viewOf(server, pins, await currentTools(env, server));
	} catch (error) {
		if (!(error instanceof GatewayError)) throw error;
		return viewOf(server, pins, null, error.message);
	}
}

/**
 * Approves every tool listed now, or the named ones, as they are listed now
 * (a tool named that is only pinned has its pin dropped); for a server that
 * needs a caller, as its callers' sessions last saw them. Needs that list:
 * a server that does not answer, or that no session has listed, is refused.
 */
export async function approveTools(
	env: Env,
	name: string,
	input: ToolApprovalInput,
): Promise<ToolsView & { approved: string[]; forgotten: string[] }> {
	const server = await serverNamed(env, name);
	const registry = registryStub(env);
	const current = await currentTools(env, server);
	const plan: ApprovalPlan = planApproval(await registry.serverPins(name), current.tools, input.tools);
	if ("unknown" in plan) {
		const names = plan.unknown.map((tool) => `'${tool}'`).join(", ");
		throw new GatewayError("bad_request", `Bad Request: tools: '${name}' neither lists nor pins ${names}.`);
	}
	const pins = await Promise.all(plan.approve.map(pinInputOf));
	const { pins: approved, refused } = await registry.approveTools(name, server.generation, pins, plan.forget);
	if (refused !== null) throw new GatewayError("conflict", `Conflict: ${refused}.`);
	return {
		...(await viewOf(server, approved, current)),
		approved: plan.approve.map((tool) => tool.name),
		forgotten: plan.forget,
	};
}
