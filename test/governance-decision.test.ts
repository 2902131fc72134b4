import { env } from "cloudflare:test";
import type { Prompt, Resource, Tool } from "@modelcontextprotocol/sdk/types.js";
import { describe, expect, it } from "vitest";
import {
	type Asker,
	decideCall,
	decideList,
	decidesList,
	type GovernedServer,
	type Judges,
	type PinVerdicts,
	reachOf,
	shapeList,
	touches,
} from "../src/governance/decision.ts";
import { callNoteOf, type DecisionSource, decideCallFor, decidesListFor } from "../src/governance/decision-inputs.ts";
import { pinVerdict } from "../src/governance/pinning.ts";
import { type CompiledPolicies, compilePolicies, type PolicyPrincipal } from "../src/governance/policies.ts";
import type { SessionRequest, ToolCall } from "../src/mcp/client-message.ts";
import type { PolicyRecord } from "../src/registry/policy-records.ts";
import type { ServerPins } from "../src/registry/tool-pins.ts";
import { telemetryFor } from "../src/telemetry/telemetry.ts";
import { parsedCall, parsedRequest } from "./support/messages.ts";

/**
 * The governance decision itself (src/governance/decision.ts): pure
 * functions of a server's shaping, its pins' verdicts, the compiled policies
 * and who asks, for lists and calls, and what of those inputs is loaded for a
 * request (decision-inputs.ts), counted. The paths that call it (sessions,
 * the stateless edge) are tested with real peers elsewhere:
 * governance-stateless.test.ts, tool-governance.test.ts, tool-shaping.test.ts.
 */

const ci: PolicyPrincipal = {
	kind: "key",
	id: "key_abcdefghijkl",
	subject: null,
	email: null,
	groups: [],
	rule: null,
	keyName: "ci",
};
const asker: Asker = { principal: ci, virtualServer: null, now: Date.UTC(2026, 11, 1, 12) };

const readFile: Tool = {
	name: "read_file",
	description: "Reads a file.",
	inputSchema: { type: "object" },
	annotations: { readOnlyHint: true },
};
const writeFile: Tool = { name: "write_file", description: "Writes a file.", inputSchema: { type: "object" } };
const deleteFile: Tool = { name: "delete_file", description: "Deletes a file.", inputSchema: { type: "object" } };
const TOOLS = [readFile, writeFile, deleteFile];

function server(fields: Partial<GovernedServer> = {}): GovernedServer {
	return { name: "files", generation: "g1", ...fields };
}

let made = 0;
function policies(...fields: Array<Partial<PolicyRecord> & Pick<PolicyRecord, "expression" | "effect">>) {
	return compilePolicies(
		fields.map((field) => ({
			name: `policy-${++made}`,
			applies: null,
			priority: 100,
			createdAt: 0,
			updatedAt: 0,
			...field,
		})),
	);
}

/** A tools/call as the edge parsed it (the decision is given what the edge parsed). */
function call(name: string, args: Record<string, unknown> = {}): ToolCall {
	return parsedCall({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name, arguments: args } });
}

/** The pins of `files` approve read_file and delete_file as they are; write_file is new. */
const pins: ServerPins = {
	server: "files",
	generation: "g1",
	recordedAt: 0,
	pins: [readFile, deleteFile].map((tool) => ({
		tool: tool.name,
		digest: "0".repeat(64),
		definition: tool,
		approvedAt: 0,
	})),
};
/** The verdicts a list of the upstream's tools gets under block (what `checkListed` gives). */
const underBlock: PinVerdicts = (real) => {
	const tool = TOOLS.find((candidate) => candidate.name === real);
	return tool ? pinVerdict("block", pins, tool) : null;
};

function judges(compiled: CompiledPolicies, pinned: PinVerdicts | null = null): Judges {
	return { policies: compiled, asker, pinned };
}

/** A decision source that counts what is asked of it; its pins are read from `pinsRead`. */
function countingSource(compiled: CompiledPolicies, listed: readonly Tool[] = TOOLS) {
	const asked: string[] = [];
	const source: DecisionSource = {
		policies: async () => {
			asked.push("policies");
			return compiled;
		},
		guards: async () => [],
		guardWebhook: async () => {
			asked.push("guardWebhook");
			return new Response(null, { status: 500 });
		},
		asker: () => {
			asked.push("asker");
			return asker;
		},
		tools: async (governed) => {
			asked.push("tools");
			return { shaped: shapeList(governed, "tools", [...listed]), upstream: listed };
		},
		pins: {
			reader: {
				key: () => Promise.reject(new Error("not read")),
				endpoint: () => Promise.reject(new Error("not read")),
				servers: () => Promise.reject(new Error("not read")),
				rules: () => Promise.reject(new Error("not read")),
				policies: () => Promise.reject(new Error("not read")),
				guards: () => Promise.reject(new Error("not read")),
				pins: async (name) => {
					asked.push(`pins ${name}`);
					return name === "files" ? pins : null;
				},
			},
			registry: {
				recordFirstSeen: () => Promise.reject(new Error("not written")),
				recordObserved: () => Promise.reject(new Error("not written")),
			},
			ttlMs: 0,
			waitUntil: () => {},
		},
		telemetry: telemetryFor(env),
	};
	return { asked, source };
}

describe("how far governance reaches into a server", () => {
	it("a server with no shaping, no pins under block and no policy for it is untouched: its lists pass as they are, its calls as they came", () => {
		const elsewhere = policies({ expression: "true", effect: "deny", applies: { servers: ["other"] } });
		const reach = reachOf(server(), elsewhere);
		expect(reach).toEqual({ tools: false, judgedCalls: false, prompts: false, resources: false });
		expect(touches(reach)).toBe(false);
		expect(decideList(server(), "tools", TOOLS, null)).toBe(TOOLS);
		const message = call("write_file", { path: "/x" });
		const decision = decideCall(server(), message, null);
		expect(decision).toEqual({ send: message, real: "write_file" });
		expect("send" in decision && decision.send).toBe(message);
	});

	it("each input reaches what it governs: tool shaping the tools lists, pins under block and a policy for the server the calls too, prompt and resource choices their own lists", () => {
		const none = compilePolicies([]);
		const cases: Array<[string, GovernedServer, CompiledPolicies, ReturnType<typeof reachOf>]> = [
			[
				"tool shaping",
				server({ tools: { exclude: ["delete_*"] } }),
				none,
				{ tools: true, judgedCalls: false, prompts: false, resources: false },
			],
			[
				"pins under block",
				server({ pinning: "block" }),
				none,
				{ tools: true, judgedCalls: true, prompts: false, resources: false },
			],
			[
				"pins under warn",
				server({ pinning: "warn" }),
				none,
				{ tools: false, judgedCalls: false, prompts: false, resources: false },
			],
			[
				"a policy for the server",
				server(),
				policies({ expression: "false", effect: "deny", applies: { servers: ["files"] } }),
				{ tools: true, judgedCalls: true, prompts: false, resources: false },
			],
			[
				"a policy for every server",
				server(),
				policies({ expression: "false", effect: "deny" }),
				{ tools: true, judgedCalls: true, prompts: false, resources: false },
			],
			[
				"a prompt choice",
				server({ prompts: { exclude: ["secret"] } }),
				none,
				{ tools: false, judgedCalls: false, prompts: true, resources: false },
			],
			[
				"a resource choice",
				server({ resources: { exclude: ["file:///etc/*"] } }),
				none,
				{ tools: false, judgedCalls: false, prompts: false, resources: true },
			],
		];
		for (const [what, governed, compiled, expected] of cases) {
			const reach = reachOf(governed, compiled);
			expect(reach, what).toEqual(expected);
			expect(touches(reach), what).toBe(what !== "pins under warn");
			expect(decidesList(reach, "resourceTemplates"), what).toBe(expected.resources);
		}
	});
});

describe("what a decision loads, and when", () => {
	it("a call to an ungoverned server reads the policies (the isolate's cache) and nothing more; a prompt or resource request, and a name shaping refuses, read nothing", async () => {
		const { asked, source } = countingSource(compilePolicies([]));
		expect("send" in (await decideCallFor(source, server(), call("write_file")))).toBe(true);
		expect(asked).toEqual(["policies"]);
		asked.length = 0;
		const read = parsedRequest({ jsonrpc: "2.0", id: 2, method: "resources/read", params: { uri: "file:///a" } });
		expect(await decideCallFor(source, server(), read)).toEqual({ send: read });
		const hiding = server({ tools: { exclude: ["delete_*"] } });
		expect(await decideCallFor(source, hiding, call("delete_file"))).toMatchObject({ why: "unknown" });
		expect(await decidesListFor(source, hiding, "prompts")).toBe(false);
		expect(asked).toEqual([]);
	});

	it("a call to a server a policy governs lists its tools and asks who calls; under block the pins are read too", async () => {
		const compiled = policies({ expression: "false", effect: "deny", applies: { servers: ["files"] } });
		const governed = countingSource(compiled);
		expect("send" in (await decideCallFor(governed.source, server(), call("read_file")))).toBe(true);
		expect(governed.asked).toEqual(["policies", "tools", "asker"]);
		const held = countingSource(compilePolicies([]));
		const refused = await decideCallFor(held.source, server({ pinning: "block" }), call("write_file"));
		expect(refused).toMatchObject({ why: "held" });
		expect(held.asked).toEqual(["policies", "tools", "pins files", "asker"]);
	});
});

describe("lists", () => {
	it("shaping applies where a list enters: hidden tools left out, an alias with the operator's description and annotations; hidden prompts and resources left out, URIs compared in normal form", () => {
		const shaped = shapeList(
			server({
				tools: {
					exclude: ["delete_*"],
					overrides: { write_file: { name: "save", description: "Saves.", annotations: { idempotentHint: true } } },
				},
			}),
			"tools",
			[...TOOLS],
		);
		expect(shaped).toEqual([
			readFile,
			{ ...writeFile, name: "save", description: "Saves.", annotations: { idempotentHint: true } },
		]);
		const prompts: Prompt[] = [{ name: "greet" }, { name: "secret_plan" }];
		expect(shapeList(server({ prompts: { exclude: ["secret_*"] } }), "prompts", prompts)).toEqual([{ name: "greet" }]);
		const resources: Resource[] = [
			{ uri: "file:///etc/passwd", name: "passwd" },
			{ uri: "file:///home/readme", name: "readme" },
		];
		expect(shapeList(server({ resources: { exclude: ["FILE:///etc/*"] } }), "resources", resources)).toEqual([
			{ uri: "file:///home/readme", name: "readme" },
		]);
	});

	it("a tool the pins hold under block is left out by its upstream name, whatever its alias; one they approve stays", () => {
		const aliased = server({ pinning: "block", tools: { overrides: { write_file: { name: "save" } } } });
		const shaped = shapeList(aliased, "tools", [...TOOLS]);
		const listed = decideList(aliased, "tools", shaped, judges(compilePolicies([]), underBlock));
		expect(listed.map((tool) => tool.name)).toEqual(["read_file", "delete_file"]);
	});

	it("a policy sees each tool as the caller's endpoint shows it: the alias as tool.name, the upstream's name as tool.realName, a virtual server's own alias and annotations over the server's", () => {
		const aliased = server({ tools: { overrides: { write_file: { name: "save" } } } });
		const shaped = shapeList(aliased, "tools", [...TOOLS]);
		const byAlias = policies({ expression: 'tool.name == "save" && tool.realName == "write_file"', effect: "deny" });
		expect(decideList(aliased, "tools", shaped, judges(byAlias)).map((tool) => tool.name)).toEqual([
			"read_file",
			"delete_file",
		]);
		const readOnly = policies({ expression: "tool.annotations.readOnlyHint == true", effect: "allow" });
		const onVirtual: Asker = {
			...asker,
			virtualServer: "desk",
			endpointTools: { overrides: { files__delete_file: { name: "tidy", annotations: { readOnlyHint: true } } } },
		};
		const listed = decideList(aliased, "tools", shaped, { policies: readOnly, asker: onVirtual, pinned: null });
		expect(listed.map((tool) => tool.name)).toEqual(["read_file", "delete_file"]);
	});
});

describe("calls", () => {
	const aliased = server({ tools: { exclude: ["delete_*"], overrides: { write_file: { name: "save" } } } });

	it("an alias is sent under the upstream's name; the real name of an aliased tool and a hidden tool are refused as unknown tools", () => {
		const sent = decideCall(aliased, call("save", { path: "/x" }), null);
		expect(sent).toEqual({ send: call("write_file", { path: "/x" }), real: "write_file" });
		expect(callNoteOf(aliased, sent)).toEqual({ server: "files", real: "write_file" });
		for (const name of ["write_file", "delete_file"]) {
			const refused = decideCall(aliased, call(name), null);
			expect(refused).toMatchObject({ why: "unknown" });
			expect("refused" in refused && refused.refused.toJsonRpcError()).toEqual({
				code: -32602,
				message: `Unknown tool: '${name}' is not offered by this endpoint.`,
				data: { kind: "invalid_params" },
			});
			expect(callNoteOf(aliased, refused)).toEqual({ server: "files", refused: "unknown_tool" });
		}
	});

	it("a hidden prompt, a hidden resource however its URI is spelled, and completions of either are refused as unknown; other requests go as they came", () => {
		const hiding = server({ prompts: { exclude: ["secret_*"] }, resources: { exclude: ["file:///etc/*"] } });
		const request = (method: string, params: Record<string, unknown>): SessionRequest =>
			parsedRequest({ jsonrpc: "2.0", id: 3, method, params });
		const refusals: Array<[SessionRequest, string]> = [
			[
				request("prompts/get", { name: "secret_plan" }),
				"Unknown prompt: 'secret_plan' is not offered by this endpoint.",
			],
			[
				request("resources/read", { uri: "FILE:///etc/x/../passwd" }),
				"Resource not found: FILE:///etc/x/../passwd is not offered by this endpoint.",
			],
			[
				request("resources/subscribe", { uri: "file:///etc/passwd" }),
				"Resource not found: file:///etc/passwd is not offered by this endpoint.",
			],
			[
				request("completion/complete", {
					ref: { type: "ref/prompt", name: "secret_plan" },
					argument: { name: "topic", value: "" },
				}),
				"Unknown prompt: 'secret_plan' is not offered by this endpoint.",
			],
			[
				request("completion/complete", {
					ref: { type: "ref/resource", uri: "file:///etc/{name}" },
					argument: { name: "name", value: "" },
				}),
				"Resource not found: file:///etc/{name} is not offered by this endpoint.",
			],
		];
		for (const [message, sentence] of refusals) {
			const decision = decideCall(hiding, message, null);
			expect("refused" in decision && decision.refused.message, message.message.method).toBe(sentence);
		}
		for (const message of [
			request("prompts/get", { name: "greet" }),
			request("resources/read", { uri: "file:///home/readme" }),
			request("ping", {}),
		]) {
			expect(decideCall(hiding, message, null)).toEqual({ send: message });
		}
	});

	it("a tool the pins hold is refused saying it is new, before any policy is asked; an approved one is sent", () => {
		const blocking = server({ pinning: "block" });
		const allowAll = policies({ expression: "true", effect: "allow" });
		const held = decideCall(blocking, call("write_file"), { ...judges(allowAll, underBlock), listed: TOOLS });
		expect("refused" in held && held.refused.toJsonRpcError()).toEqual({
			code: -32602,
			message:
				"Tool 'write_file' is new since this server's tools were approved; ask the operator to review and approve it.",
			data: { kind: "invalid_params", server: "files" },
		});
		expect(callNoteOf(blocking, held)).toEqual({ server: "files", refused: "refused_pinning" });
		expect(decideCall(blocking, call("read_file"), { ...judges(allowAll, underBlock), listed: TOOLS })).toMatchObject({
			real: "read_file",
		});
	});

	it("a call a policy denies is refused naming the policy, never its expression, judged by its arguments and the tool's listed annotations; a tool not listed is judged with none", () => {
		const acme = policies({
			name: "acme-only",
			expression: 'has(arguments.path) && !arguments.path.startsWith("/acme/")',
			effect: "deny",
		});
		const listed = { ...judges(acme), listed: TOOLS };
		const denied = decideCall(server(), call("write_file", { path: "/etc/x" }), listed);
		expect(denied).toMatchObject({ why: "denied" });
		expect("refused" in denied && denied.refused.status).toBe(200);
		expect("refused" in denied && denied.refused.toJsonRpcError()).toEqual({
			code: -32602,
			message: "The gateway's policy 'acme-only' does not allow this call of 'write_file'; ask its operator.",
			data: { kind: "forbidden", server: "files" },
		});
		expect(callNoteOf(server(), denied)).toEqual({ server: "files" });
		expect(decideCall(server(), call("write_file", { path: "/acme/x" }), listed)).toMatchObject({ real: "write_file" });
		const readsOnly = { ...judges(policies({ expression: "tool.annotations.readOnlyHint", effect: "allow" })) };
		expect(decideCall(server(), call("read_file"), { ...readsOnly, listed: TOOLS })).toMatchObject({
			real: "read_file",
		});
		expect(decideCall(server(), call("read_file"), { ...readsOnly, listed: [] })).toMatchObject({ why: "denied" });
	});
});
