import { afterEach, describe, expect, it, vi } from "vitest";
import { failureStatusMessage } from "../src/telemetry/redaction.ts";
import { admin, createKey, uniqueName } from "./support/gateway.ts";
import { GATEWAY_OTLP_TENANT, newOtlpTenant, otlpEnv, otlpSpans } from "./support/otlp.ts";
import {
	callBody,
	clientParent,
	gatewayWith,
	legacyPost,
	newTraceId,
	openTracedSession,
	sessionSpanOf,
	spanOf,
} from "./support/traced-gateway.ts";
import { registerServer, toolCallsOf } from "./support/upstreams.ts";

/**
 * Code mode's telemetry (docs/code-mode.md): the `execute_code` call is a
 * SERVER span; each inner call of its program is an INTERNAL span of the
 * session under it, and an inner call that reaches an upstream has its CLIENT
 * span under that one, as a direct call's upstream request is under its call.
 */

const policies: string[] = [];

afterEach(async () => {
	vi.restoreAllMocks();
	for (const name of policies.splice(0)) await admin("DELETE", `/policies/${name}`);
});

describe("code mode's spans", () => {
	it("each inner call of a program is an INTERNAL span under the execute_code SERVER span, with its upstream CLIENT span under it", async () => {
		const tenant = newOtlpTenant();
		const gateway = gatewayWith(otlpEnv(tenant));
		const server = await registerServer("beta");
		const { key } = await createKey({ servers: [server], disclosure: "code" });
		const sessionId = await openTracedSession(gateway, "/mcp", key);
		const trace = newTraceId();
		const api = server.replaceAll("-", "_");
		const code = `const s = await codemode.${api}__add({ a: 1, b: 2 }); return await codemode.${api}__echo({ text: String(s.sum) });`;
		const { response, text } = await gateway.fetch(
			legacyPost("/mcp", key, sessionId, callBody(9, "execute_code", { code }, { traceparent: clientParent(trace) })),
		);
		expect(response.status).toBe(200);
		expect(text).toContain('"structuredContent":{"result":3,');
		const program = await spanOf(tenant, trace, "tools/call execute_code", "SERVER");
		const poke = () =>
			gateway.fetch(legacyPost("/mcp", key, sessionId, { jsonrpc: "2.0", id: "poke", method: "ping" }));
		for (const tool of ["add", "echo"]) {
			const inner = await sessionSpanOf(trace, `tools/call ${server}__${tool}`, poke, "INTERNAL");
			const upstream = await sessionSpanOf(trace, `tools/call ${tool}`, poke);
			expect(inner.parentSpanId).toBe(program.spanId);
			expect(inner.attributes["gen_ai.tool.name"]).toBe(`${server}__${tool}`);
			expect(inner.status.code).toBe("UNSET");
			expect(upstream.parentSpanId).toBe(inner.spanId);
		}
	});

	it("an inner call a policy denies is an error span with the refusal's kind under the execute_code span, and no CLIENT span", async () => {
		const tenant = newOtlpTenant();
		const gateway = gatewayWith(otlpEnv(tenant));
		const server = await registerServer("beta");
		const policy = uniqueName("policy");
		const put = await admin("PUT", `/policies/${policy}`, {
			expression: 'tool.name == "add"',
			effect: "deny",
			applies: { servers: [server] },
		});
		expect(put.status).toBe(201);
		policies.push(policy);
		const { key } = await createKey({ servers: [server], disclosure: "code" });
		const sessionId = await openTracedSession(gateway, "/mcp", key);
		const trace = newTraceId();
		const api = server.replaceAll("-", "_");
		// The shared upstream's log holds other tests' calls of add: arguments of this test's own tell them apart.
		const a = Number.parseInt(trace.slice(0, 8), 16);
		const code = `
			let refused = "";
			try { await codemode.${api}__add({ a: ${a}, b: 2 }); } catch (error) { refused = error.message; }
			const echoed = await codemode.${api}__echo({ text: "allowed" });
			return { refused, echoed };
		`;
		const { response, text } = await gateway.fetch(
			legacyPost("/mcp", key, sessionId, callBody(9, "execute_code", { code }, { traceparent: clientParent(trace) })),
		);
		expect(response.status).toBe(200);
		expect(text).toContain(`policy '${policy}'`);
		const program = await spanOf(tenant, trace, "tools/call execute_code", "SERVER");
		const poke = () =>
			gateway.fetch(legacyPost("/mcp", key, sessionId, { jsonrpc: "2.0", id: "poke", method: "ping" }));
		const allowed = await sessionSpanOf(trace, `tools/call ${server}__echo`, poke, "INTERNAL");
		const denied = await sessionSpanOf(trace, `tools/call ${server}__add`, poke, "INTERNAL");
		const upstream = await sessionSpanOf(trace, "tools/call echo", poke);

		const inner = (await otlpSpans(GATEWAY_OTLP_TENANT)).filter(
			(span) => span.traceId === trace && span.kind === "INTERNAL" && span.parentSpanId === program.spanId,
		);
		expect(inner.map((span) => span.name).sort()).toEqual([`tools/call ${server}__add`, `tools/call ${server}__echo`]);
		expect(allowed.parentSpanId).toBe(program.spanId);
		expect(allowed.status.code).toBe("UNSET");
		expect(upstream.parentSpanId).toBe(allowed.spanId);
		expect(denied.parentSpanId).toBe(program.spanId);
		expect(denied.status).toEqual({ code: "ERROR", message: failureStatusMessage("forbidden") });
		expect(denied.attributes["error.type"]).toBe("forbidden");
		// The denied call was never sent: no CLIENT span of it (it ended before the echo's, so it would have been exported by now), and the upstream never saw it.
		const clients = (await otlpSpans(GATEWAY_OTLP_TENANT)).filter(
			(span) => span.traceId === trace && span.kind === "CLIENT",
		);
		expect(clients.map((span) => span.name)).toEqual(["tools/call echo"]);
		expect(await toolCallsOf("beta", "add", { a, b: 2 })).toEqual([]);
	});
});
