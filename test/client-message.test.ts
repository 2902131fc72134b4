import { LATEST_PROTOCOL_VERSION } from "@modelcontextprotocol/sdk/types.js";
import { describe, expect, it } from "vitest";
import { type ClientMessage, clientMessageOf } from "../src/mcp/client-message.ts";
import { GatewayError } from "../src/mcp/gateway-error.ts";
import {
	callArguments,
	calledTool,
	namedTaskId,
	resourceUri,
	taskAsked,
	withToolName,
} from "../src/mcp/message-accessors.ts";
import { meetsTasks } from "../src/session/2025-11-25/task-requests.ts";
import { createKey, openSession, readReply, rpc, uniqueName } from "./support/gateway.ts";
import { parsedCall, parsedRequest } from "./support/messages.ts";
import { ENVELOPE, modernPost } from "./support/modern.ts";
import { registerServer, upstreamLog } from "./support/upstreams.ts";

/** What parsing `body` throws, as the gateway's error (fails the test when it does not throw). */
function refusal(body: unknown, refusedParamsStatus?: number): GatewayError {
	try {
		clientMessageOf(body, refusedParamsStatus);
	} catch (error) {
		if (error instanceof GatewayError) return error;
		throw error;
	}
	throw new Error(`parsed: ${JSON.stringify(body)}`);
}

describe("a client message, parsed once where it enters", () => {
	it("a tools/call is typed by its method: its name and arguments read as the SDK's schema has them, and what that schema does not name is kept as the client sent it", () => {
		const params = {
			name: "echo",
			arguments: { text: "hi" },
			requestState: "opaque",
			_meta: { progressToken: "p-1", "example.com/trace": { a: 1 } },
		};
		const call = parsedCall({ jsonrpc: "2.0", id: 7, method: "tools/call", params });
		expect(call).toMatchObject({ kind: "request", method: "tools/call" });
		expect(call.message).toEqual({ jsonrpc: "2.0", id: 7, method: "tools/call", params });
		expect(calledTool(call)).toBe("echo");
		expect(callArguments(call)).toEqual({ text: "hi" });
		expect(withToolName(call, "real_echo").message.params).toEqual({ ...params, name: "real_echo" });
		expect(call.message.params).toEqual(params);
	});

	it("a request or notification of a method the gateway does not read goes on exactly as it came, its method null", () => {
		const request = { jsonrpc: "2.0", id: "r", method: "vendor/custom", params: { anything: [1, { deep: true }] } };
		const notification = { jsonrpc: "2.0", method: "notifications/vendor", params: { x: null } };
		expect(clientMessageOf(request)).toEqual({ kind: "request", method: null, message: request });
		expect(clientMessageOf(notification)).toEqual({ kind: "notification", method: null, message: notification });
	});

	it("the accessors read what each method names: a resource's URI, a task's id, and nothing of other methods", () => {
		const read = parsedRequest({ jsonrpc: "2.0", id: 1, method: "resources/read", params: { uri: "file:///a" } });
		const get = parsedRequest({ jsonrpc: "2.0", id: 2, method: "tasks/get", params: { taskId: "t-1" } });
		expect(resourceUri(read)).toBe("file:///a");
		expect(namedTaskId(get)).toBe("t-1");
		expect([calledTool(read), namedTaskId(read), resourceUri(get)]).toEqual([null, null, null]);
	});

	it("params a method's schema refuses are -32602 with a sentence naming the field, the answer to a 2025 request (HTTP 200), a 2026-07-28 one's or a notification's 400; a body that is not JSON-RPC stays -32600", () => {
		const missing = refusal({ jsonrpc: "2.0", id: 7, method: "tools/call", params: { arguments: {} } });
		expect([missing.status, missing.code, missing.message]).toEqual([
			200,
			-32602,
			"Invalid params: tools/call needs a name string.",
		]);
		expect(missing.toJsonRpcError()).toMatchObject({ code: -32602 });
		const wrong = refusal({ jsonrpc: "2.0", id: 8, method: "resources/read", params: { uri: 5 } }, 400);
		expect([wrong.status, wrong.message]).toEqual([
			400,
			"Invalid params: resources/read's params.uri: Invalid input: expected string, received number.",
		]);
		expect(refusal({ jsonrpc: "2.0", id: 9, method: "tasks/get" }).message).toBe(
			"Invalid params: tasks/get needs params.",
		);
		const cancelled = refusal({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: [1] } });
		expect([cancelled.status, cancelled.code]).toEqual([400, -32602]);
		const notJsonRpc = refusal({ jsonrpc: "1.0", id: 1, method: "tools/call", params: { name: "echo" } });
		expect([notJsonRpc.kind, notJsonRpc.code]).toEqual(["invalid_request", -32600]);
	});

	it("a tools/call's arguments may be null, taken as none; an array is refused; its task augmentation is left for the tasks wire to judge", () => {
		const none = parsedCall({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "echo", arguments: null } });
		expect(callArguments(none)).toEqual({});
		expect(
			refusal({ jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "echo", arguments: [] } }).message,
		).toBe("Invalid params: tools/call's params.arguments: Invalid input: expected an object.");
		const asked = parsedCall({
			jsonrpc: "2.0",
			id: 3,
			method: "tools/call",
			params: { name: "echo", task: { ttl: "soon" } },
		});
		expect(taskAsked(asked)).toBe(true);
		expect(asked.message.params.task).toEqual({ ttl: "soon" });
	});

	it("initialize keeps the request as the client sent it (what a transparent upstream is sent) and its params as the SDK's schema reads them (what the session keeps)", () => {
		const params = {
			protocolVersion: LATEST_PROTOCOL_VERSION,
			capabilities: { roots: { listChanged: true }, future: { x: 1 } },
			clientInfo: { name: "client", version: "1" },
		};
		const initialize: ClientMessage = clientMessageOf({ jsonrpc: "2.0", id: 1, method: "initialize", params });
		expect(initialize).toEqual({
			kind: "request",
			method: "initialize",
			message: { jsonrpc: "2.0", id: 1, method: "initialize", params },
			params: { ...params, capabilities: { roots: { listChanged: true } } },
		});
	});
});

describe("tasks only where they are in play", () => {
	it("only a task method, or a call that asks to be made a task, meets the task router: a plain call never does", () => {
		const request = (method: string, params?: Record<string, unknown>) =>
			parsedRequest({ jsonrpc: "2.0", id: 1, method, ...(params ? { params } : {}) });
		const meeting = [
			request("tools/call", { name: "echo", task: {} }),
			request("tasks/get", { taskId: "t" }),
			request("tasks/result", { taskId: "t" }),
			request("tasks/cancel", { taskId: "t" }),
			request("tasks/list"),
		];
		const passing = [
			request("tools/call", { name: "echo", arguments: { text: "hi" } }),
			request("tools/list"),
			request("resources/read", { uri: "file:///a" }),
			request("ping"),
			request("vendor/custom", { task: {} }),
		];
		expect(meeting.map(meetsTasks)).toEqual(meeting.map(() => true));
		expect(passing.map(meetsTasks)).toEqual(passing.map(() => false));
	});
});

describe("a malformed message is refused where it enters", () => {
	it("a 2025 client's tools/call whose arguments are not an object is answered -32602 naming the field (HTTP 200), and reaches no upstream", async () => {
		const server = await registerServer("alpha");
		const { key } = await createKey({ servers: [server] });
		const path = `/mcp/${server}`;
		const sessionId = await openSession(path, key);
		const marker = uniqueName("not-an-object");
		const response = await rpc(path, key, sessionId, {
			jsonrpc: "2.0",
			id: 4,
			method: "tools/call",
			params: { name: "echo", arguments: [marker] },
		});
		expect(response.status).toBe(200);
		expect((await readReply(response)).error).toMatchObject({
			code: -32602,
			message: "Invalid params: tools/call's params.arguments: Invalid input: expected an object.",
		});
		expect((await upstreamLog("alpha")).filter((entry) => JSON.stringify(entry.body ?? null).includes(marker))).toEqual(
			[],
		);
	});

	it("a 2026-07-28 client's resources/read without a URI is refused with 400 -32602 naming the field, and reaches no upstream", async () => {
		const server = await registerServer("modern");
		const { key } = await createKey({ servers: [server] });
		const marker = uniqueName("no-uri");
		const response = await modernPost(`/mcp/${server}`, key, {
			id: marker,
			method: "resources/read",
			params: { _meta: ENVELOPE },
		});
		expect(response.status).toBe(400);
		expect(((await response.json()) as { error: unknown }).error).toMatchObject({
			code: -32602,
			message: "Invalid params: resources/read needs a uri string.",
		});
		expect(
			(await upstreamLog("modern")).filter((entry) => JSON.stringify(entry.body ?? null).includes(marker)),
		).toEqual([]);
	});
});
