import { createExecutionContext, env, waitOnExecutionContext } from "cloudflare:test";
import { describe, expect, it, vi } from "vitest";
import { settingsFrom } from "../src/config.ts";
import { connectorObject } from "../src/connectors/connector-do.ts";
import { createApp } from "../src/edge/app.ts";
import type { Env } from "../src/env.ts";
import { lastHourCalls } from "../src/telemetry/call-counts.ts";
import { OTEL_VARIABLES } from "../src/telemetry/otel-config.ts";
import { telemetryFor } from "../src/telemetry/telemetry.ts";
import { eventually } from "./support/eventually.ts";
import { connectorToken, startConnector } from "./support/fake-connector.ts";
import { admin, BASE, createKey, mcpHeaders, openSession, readReply, uniqueName } from "./support/gateway.ts";
import { registerServer, upstreamUrl } from "./support/upstreams.ts";

/** The gateway project's Worker, as every test but the telemetry project's sees it. */
describe("Telemetry in the gateway test project", () => {
	it("a connector connecting and going makes no instrument and records nothing", async () => {
		const server = uniqueName("conn");
		expect((await admin("PUT", `/servers/${server}?check=false`, { connector: {} })).status).toBe(201);
		const { token } = await connectorToken(server);
		const made = vi.spyOn(telemetryFor(env).meter, "createCounter");
		const connector = await startConnector(server, token, { upstream: upstreamUrl("beta") });
		connector.close();
		await connector.closed;
		await eventually(async () => (await connectorObject(env, server).online()).length === 0, "the connector gone");
		expect(made).not.toHaveBeenCalled();
		made.mockRestore();
	});

	it("is off: no OTEL_* endpoint reaches the test Worker, whatever a local .dev.vars says", () => {
		const set = OTEL_VARIABLES.filter((name) => {
			const value = (env as Record<string, unknown>)[name];
			return typeof value === "string" && value !== "" && name.includes("ENDPOINT");
		});
		expect(set).toEqual([]);
		expect(telemetryFor(env).enabled).toBe(false);
	});
});

/** The test Worker's env without TOOL_CALL_LOG (the test bindings turn it on), or with it set to `value`. */
function envWithToolCallLog(value?: "on" | "off"): Env {
	const { TOOL_CALL_LOG: _set, ...rest } = env as Env & { TOOL_CALL_LOG?: string };
	return (value === undefined ? rest : { ...rest, TOOL_CALL_LOG: value }) as Env;
}

/** Calls `echo` on a fresh session of a new server through the edge under `callEnv`; its tool_call lines and the server's name. */
async function callUnder(callEnv: Env): Promise<{ lines: string[]; server: string }> {
	const server = await registerServer("beta");
	const { key } = await createKey({ servers: [server] });
	const path = `/mcp/${server}`;
	const sessionId = await openSession(path, key);
	const log = vi.spyOn(console, "log");
	const ctx = createExecutionContext();
	const call = { jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "echo", arguments: { text: "hi" } } };
	const request = new Request(`${BASE}${path}`, {
		method: "POST",
		headers: mcpHeaders(key, sessionId),
		body: JSON.stringify(call),
	});
	const reply = await readReply(await createApp().fetch(request, callEnv, ctx));
	expect(reply.result).toBeDefined();
	await waitOnExecutionContext(ctx);
	const lines = log.mock.calls
		.map(([line]) => String(line))
		.filter((line) => line.startsWith('{"event":"tool_call"') && line.includes(server));
	log.mockRestore();
	return { lines, server };
}

const callsOf = async (server: string) => (await lastHourCalls(env))?.find((row) => row.server === server)?.calls ?? 0;

describe("a tool call's account, with nothing configured", () => {
	it("TOOL_CALL_LOG unset (off by default): a tool call prints no tool_call line, and the dashboard's counter still counts it", async () => {
		const { lines, server } = await callUnder(envWithToolCallLog());
		expect(lines).toEqual([]);
		await eventually(async () => (await callsOf(server)) === 1, "the call counted");
	});

	it("TOOL_CALL_LOG=on: the same call prints its one tool_call line", async () => {
		const { lines, server } = await callUnder(envWithToolCallLog("on"));
		expect(lines).toHaveLength(1);
		expect(JSON.parse(lines[0] ?? "{}")).toMatchObject({ event: "tool_call", server, tool: "echo", outcome: "ok" });
	});

	it("TOOL_CALL_LOG=loud is refused as a misconfiguration naming the variable", () => {
		expect(() => settingsFrom({ ...envWithToolCallLog(), TOOL_CALL_LOG: "loud" })).toThrow(/TOOL_CALL_LOG/);
	});
});
