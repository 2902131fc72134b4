import { afterEach, describe, expect, it, vi } from "vitest";
import { createKey } from "./support/gateway.ts";
import { newOtlpTenant, otlpEnv } from "./support/otlp.ts";
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
import { registerServer } from "./support/upstreams.ts";

/**
 * Code mode's telemetry (docs/code-mode.md): the `execute_code` call is a
 * SERVER span, and each inner call of its program that reaches an upstream is
 * a CLIENT span of the session under it, as a direct call's upstream request is.
 */

afterEach(() => {
	vi.restoreAllMocks();
});

describe("code mode's spans", () => {
	it("each inner call of a program is a CLIENT span under the execute_code SERVER span", async () => {
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
		const add = await sessionSpanOf(trace, "tools/call add", poke);
		const echo = await sessionSpanOf(trace, "tools/call echo", poke);
		expect(add.parentSpanId).toBe(program.spanId);
		expect(echo.parentSpanId).toBe(program.spanId);
	});
});
