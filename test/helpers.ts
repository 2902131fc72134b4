import { env, runInDurableObject } from "cloudflare:test";
import { exports } from "cloudflare:workers";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { LATEST_PROTOCOL_VERSION } from "@modelcontextprotocol/sdk/types.js";
import { CfWorkerJsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/cfworker";
import { inject } from "vitest";
import { sha256Hex } from "../src/crypto.ts";
import type { RegistryClient } from "../src/session/registry-client.ts";
import type { SessionDO } from "../src/session/session-do.ts";

/** The admin token the test bindings configure (a fixture, not a secret). */
export const TEST_ADMIN_BEARER = "test-admin-token";
export const BASE = "http://gateway.test";

/** A request through the gateway Worker's fetch handler. */
export function gatewayFetch(path: string, init: RequestInit = {}): Promise<Response> {
	return exports.default.fetch(new Request(`${BASE}${path}`, init));
}

export async function admin(method: string, path: string, body?: unknown): Promise<Response> {
	const headers: Record<string, string> = { authorization: `Bearer ${TEST_ADMIN_BEARER}` };
	if (body !== undefined) headers["content-type"] = "application/json";
	return gatewayFetch(`/admin${path}`, {
		method,
		headers,
		body: body === undefined ? undefined : JSON.stringify(body),
	});
}

let counter = 0;
/** A server name no other test uses, since storage is shared across tests of a file. */
export function uniqueName(prefix: string): string {
	counter++;
	return `${prefix}-${counter}-${Math.random().toString(36).slice(2, 7)}`;
}

export type UpstreamName = "alpha" | "beta" | "gamma" | "shifting" | "mutable" | "paged";

function upstreamPort(which: UpstreamName): number {
	return inject(`${which}Port`);
}

export function upstreamUrl(which: UpstreamName): string {
	return `http://127.0.0.1:${upstreamPort(which)}/mcp`;
}

/** Registers a test upstream under a fresh name (alpha needs ALPHA_TOKEN, which the gateway resolves). */
export async function registerServer(which: UpstreamName, name = uniqueName(which)): Promise<string> {
	const headers = which === "alpha" ? { Authorization: "Bearer ${ALPHA_TOKEN}" } : {};
	const response = await admin("PUT", `/servers/${name}`, { url: upstreamUrl(which), headers });
	if (response.status !== 201 && response.status !== 200) {
		throw new Error(`registering ${name} failed: ${response.status} ${await response.text()}`);
	}
	return name;
}

export async function createKey(input: { servers?: string[]; userPath?: string; name?: string } = {}) {
	const response = await admin("POST", "/keys", input);
	if (response.status !== 201) throw new Error(`key creation failed: ${await response.text()}`);
	return (await response.json()) as { id: string; key: string; userPath: string };
}

export function mcpHeaders(
	key: string,
	sessionId?: string,
	extra: Record<string, string> = {},
): Record<string, string> {
	const headers: Record<string, string> = {
		authorization: `Bearer ${key}`,
		accept: "application/json, text/event-stream",
		"content-type": "application/json",
		...extra,
	};
	if (sessionId) headers["mcp-session-id"] = sessionId;
	return headers;
}

export function initializeBody(id: number | string = 1) {
	return {
		jsonrpc: "2.0",
		id,
		method: "initialize",
		params: {
			protocolVersion: LATEST_PROTOCOL_VERSION,
			capabilities: {},
			clientInfo: { name: "raw-test", version: "1" },
		},
	};
}

/** A raw initialize POST (no session yet), for exact status codes. */
export function postInitialize(path: string, key: string, id: number | string = 1): Promise<Response> {
	return gatewayFetch(path, { method: "POST", headers: mcpHeaders(key), body: JSON.stringify(initializeBody(id)) });
}

/** Opens a session with raw fetch and returns its ID. */
export async function openSession(path: string, key: string): Promise<string> {
	const response = await postInitialize(path, key);
	const sessionId = response.headers.get("mcp-session-id");
	if (response.status !== 200 || !sessionId) {
		throw new Error(`initialize failed: ${response.status} ${await response.text()}`);
	}
	await response.body?.cancel();
	await rpc(path, key, sessionId, { jsonrpc: "2.0", method: "notifications/initialized" });
	return sessionId;
}

/** Posts one JSON-RPC message in a session. */
export function rpc(
	path: string,
	key: string,
	sessionId: string,
	message: unknown,
	extra: Record<string, string> = {},
) {
	return gatewayFetch(path, {
		method: "POST",
		headers: mcpHeaders(key, sessionId, { "mcp-protocol-version": LATEST_PROTOCOL_VERSION, ...extra }),
		body: JSON.stringify(message),
	});
}

/** Reads a JSON-RPC reply from a JSON or SSE response. */
export async function readReply(response: Response): Promise<{
	id?: unknown;
	result?: Record<string, unknown>;
	error?: { code: number; message: string; data?: { kind?: string; server?: string } };
}> {
	const text = await response.text();
	if ((response.headers.get("content-type") ?? "").includes("text/event-stream")) {
		const data = text
			.split(/\r?\n/)
			.filter((line) => line.startsWith("data:"))
			.map((line) => line.slice(5).trim())
			.map((line) => JSON.parse(line) as { id?: unknown })
			.filter((message) => message.id !== undefined);
		return data[data.length - 1] as never;
	}
	return JSON.parse(text) as never;
}

/** The SDK client, connected through the gateway. */
export async function connectClient(
	path: string,
	key: string,
): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
	const transport = new StreamableHTTPClientTransport(new URL(`${BASE}${path}`), {
		fetch: (url, init) => exports.default.fetch(new Request(url, init)),
		requestInit: { headers: { authorization: `Bearer ${key}` } },
	});
	const client = new Client(
		{ name: "gateway-test", version: "1.0.0" },
		{ jsonSchemaValidator: new CfWorkerJsonSchemaValidator() },
	);
	await client.connect(transport);
	return { client, transport };
}

/** The SessionDO stub of a session ID, for runInDurableObject and alarms. */
export async function sessionObject(sessionId: string): Promise<DurableObjectStub<SessionDO>> {
	return env.SESSIONS.get(env.SESSIONS.idFromName(await sha256Hex(sessionId)));
}

/** A clock tests move by hand. */
export class ManualClock {
	constructor(public time = Date.now()) {}
	now(): number {
		return this.time;
	}
	advance(ms: number): void {
		this.time += ms;
	}
}

export async function upstreamLog(which: UpstreamName) {
	const response = await fetch(`http://127.0.0.1:${upstreamPort(which)}/_log`);
	return (await response.json()) as Array<{
		method: string;
		authorization: string | null;
		sessionId: string | null;
		protocolVersion: string | null;
		body: { method?: string; params?: Record<string, unknown> } | undefined;
	}>;
}

/** A registry for SessionDOs that counts reads, can fail, and can hold reads open until released. */
export class TestRegistry implements RegistryClient {
	reads = 0;
	failing = false;
	private gate: Promise<void> | null = null;
	private release: (() => void) | null = null;

	constructor(private readonly inner: RegistryClient) {}

	hold(): void {
		this.gate = new Promise((resolve) => {
			this.release = resolve;
		});
	}

	open(): void {
		this.release?.();
		this.gate = null;
	}

	async checkSession(input: Parameters<RegistryClient["checkSession"]>[0]) {
		this.reads++;
		if (this.gate) await this.gate;
		if (this.failing) throw new Error("registry unavailable (test)");
		return this.inner.checkSession(input);
	}
}

/** Gives a session's DO a manual clock and a test registry; returns them with the stub. */
export async function instrumentSession(sessionId: string) {
	const stub = await sessionObject(sessionId);
	const clock = new ManualClock(Date.now() + 1_000);
	const registry = await runInDurableObject(stub, (instance: SessionDO) => {
		instance.clock = clock;
		const wrapped = new TestRegistry(instance.registry);
		instance.registry = wrapped;
		return wrapped;
	});
	const writes = () => runInDurableObject(stub, (instance: SessionDO) => instance.store.writes);
	const stored = () => runInDurableObject(stub, async (_i: SessionDO, state) => (await state.storage.list()).size);
	return { stub, clock, registry, writes, stored };
}

/** Posts a message and reads the whole reply. */
export async function exchange(path: string, key: string, sessionId: string, message: unknown) {
	const response = await rpc(path, key, sessionId, message);
	return { status: response.status, body: await response.text() };
}
