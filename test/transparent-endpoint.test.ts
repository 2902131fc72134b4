import { describe, expect, it } from "vitest";
import {
	admin,
	connectClient,
	createKey,
	gatewayFetch,
	initializeBody,
	mcpHeaders,
	openSession,
	postInitialize,
	readReply,
	rpc,
	uniqueName,
} from "./support/gateway.ts";
import { upstreamSessionId } from "./support/session-object.ts";
import { registerServer, upstreamGate, upstreamLog, upstreamSessionLog, upstreamUrl } from "./support/upstreams.ts";

describe("transparent endpoint /mcp/:server", () => {
	it("passes tools, calls, prompts, resources and templates through unchanged (SSE upstream)", async () => {
		const server = await registerServer("alpha");
		const { key } = await createKey();
		const { client } = await connectClient(`/mcp/${server}`, key);
		expect(client.getServerVersion()).toMatchObject({ name: "alpha" });
		expect(client.getInstructions()).toBe("Tools of alpha.");

		const { tools } = await client.listTools();
		expect(tools.map((tool) => tool.name).sort()).toEqual([
			"add",
			"blob",
			"echo",
			"fail",
			"gate",
			"progress",
			"sleep",
			"whoami",
		]);
		expect(tools.find((tool) => tool.name === "add")?.annotations).toEqual({ readOnlyHint: true });

		const sum = await client.callTool({ name: "add", arguments: { a: 2, b: 3 } });
		expect(sum).toEqual({ content: [{ type: "text", text: "5" }], structuredContent: { sum: 5 } });

		const prompt = await client.getPrompt({ name: "greet", arguments: { who: "Ada" } });
		expect(prompt.messages[0]?.content).toEqual({ type: "text", text: "Hello, Ada, from alpha!" });

		const { resources } = await client.listResources();
		expect(resources.map((resource) => resource.uri)).toEqual(["demo://alpha/readme"]);
		const read = await client.readResource({ uri: "demo://alpha/readme" });
		expect(read.contents).toEqual([{ uri: "demo://alpha/readme", mimeType: "text/plain", text: "This is alpha." }]);

		const { resourceTemplates } = await client.listResourceTemplates();
		expect(resourceTemplates.map((template) => template.uriTemplate)).toEqual(["demo://alpha/notes/{id}"]);
		await client.close();
	});

	it("works with an upstream that answers in JSON", async () => {
		const server = await registerServer("beta");
		const { key } = await createKey();
		const { client } = await connectClient(`/mcp/${server}`, key);
		const result = await client.callTool({ name: "whoami", arguments: {} });
		expect(result.content).toEqual([{ type: "text", text: "beta" }]);
		await client.close();
	});

	it("an isError tool result reaches the client as exactly that result", async () => {
		const server = await registerServer("alpha");
		const { key } = await createKey();
		const { client } = await connectClient(`/mcp/${server}`, key);
		expect(await client.callTool({ name: "fail", arguments: {} })).toEqual({ content: [], isError: true });
		await client.close();
	});

	it("passes progress notifications through to the client, in order", async () => {
		const server = await registerServer("alpha");
		const { key } = await createKey();
		const { client } = await connectClient(`/mcp/${server}`, key);
		const progress: number[] = [];
		const result = await client.callTool({ name: "progress", arguments: { steps: 5 } }, undefined, {
			onprogress: (event) => progress.push(event.progress),
		});
		expect(progress).toEqual([1, 2, 3, 4, 5]);
		expect(result.content).toEqual([{ type: "text", text: "done in 5 steps" }]);
		await client.close();
	});

	it("the upstream sees exactly one initialize and one notifications/initialized per session", async () => {
		const server = await registerServer("beta");
		const path = `/mcp/${server}`;
		const { key } = await createKey();
		// The client's name passes through to the upstream: it marks this session's initialize.
		const clientName = uniqueName("client");
		const body = initializeBody();
		body.params.clientInfo = { name: clientName, version: "1" };
		const opened = await gatewayFetch(path, { method: "POST", headers: mcpHeaders(key), body: JSON.stringify(body) });
		expect(opened.status).toBe(200);
		const sessionId = opened.headers.get("mcp-session-id") ?? "";
		await opened.body?.cancel();
		expect((await rpc(path, key, sessionId, { jsonrpc: "2.0", method: "notifications/initialized" })).status).toBe(202);

		const initializes = (await upstreamLog("beta")).filter(
			(entry) =>
				entry.body?.method === "initialize" &&
				(entry.body.params?.clientInfo as { name?: string } | undefined)?.name === clientName,
		);
		expect(initializes).toHaveLength(1);
		const inSession = await upstreamSessionLog("beta", await upstreamSessionId(sessionId, server));
		expect(inSession.map((entry) => entry.body?.method)).toEqual(["notifications/initialized"]);
	});

	it("keeps the upstream session id inside the gateway", async () => {
		const server = await registerServer("alpha");
		const { key } = await createKey();
		const sessionId = await openSession(`/mcp/${server}`, key);
		const response = await rpc(`/mcp/${server}`, key, sessionId, { jsonrpc: "2.0", id: 2, method: "tools/list" });
		expect(response.headers.get("mcp-session-id")).toBeNull();
		await response.text();
		// The session's tools/list reached the upstream under the upstream's own session id ...
		const upstreamSession = await upstreamSessionId(sessionId, server);
		expect(upstreamSession).toBeTruthy();
		expect(upstreamSession).not.toBe(sessionId);
		const inSession = await upstreamSessionLog("alpha", upstreamSession);
		expect(inSession.some((entry) => entry.body?.method === "tools/list")).toBe(true);
		// ... and the gateway's id never reached the upstream at all.
		expect(JSON.stringify(await upstreamLog("alpha"))).not.toContain(sessionId);
	});

	it("a server that does not exist is 404", async () => {
		const { key } = await createKey();
		const response = await postInitialize(`/mcp/${uniqueName("nothing")}`, key);
		expect(response.status).toBe(404);
	});

	it("a server the key may not use is 404", async () => {
		const server = await registerServer("beta");
		const { key } = await createKey({ servers: [await registerServer("beta")] });
		const response = await postInitialize(`/mcp/${server}`, key);
		expect(response.status).toBe(404);
	});

	it("an unreachable upstream gets a JSON-RPC error that names the server, not a 500", async () => {
		const name = uniqueName("down");
		await admin("PUT", `/servers/${name}`, { url: "http://127.0.0.1:9/mcp" });
		const { key } = await createKey();
		const response = await postInitialize(`/mcp/${name}`, key, 7);
		expect(response.status).toBe(200);
		expect(response.headers.get("mcp-session-id")).toBeNull();
		const reply = await readReply(response);
		expect(reply.id).toBe(7);
		expect(reply.error?.data).toEqual({ kind: "upstream_unavailable", server: name });
		expect(reply.error?.message).toContain(`'${name}'`);
	});

	it("an upstream credential that is not set is reported as misconfigured, naming neither the variable nor the URL", async () => {
		const name = uniqueName("miscfg");
		await admin("PUT", `/servers/${name}`, {
			url: "http://127.0.0.1:9/mcp",
			headers: { Authorization: "Bearer ${UPSTREAM_NOT_SET_ANYWHERE}" },
		});
		const { key } = await createKey();
		const response = await postInitialize(`/mcp/${name}`, key);
		const reply = await readReply(response);
		expect(reply.error?.data).toEqual({ kind: "misconfigured", server: name });
		expect(reply.error?.message).toContain(name);
		expect(reply.error?.message).not.toContain("UPSTREAM_NOT_SET_ANYWHERE");
		expect(reply.error?.message).not.toContain("127.0.0.1");
	});
});

describe("upstream deadline", () => {
	for (const which of ["alpha", "beta"] as const) {
		it(`a call that outlasts the server's timeout ends with an upstream_timeout result naming it (${which === "alpha" ? "SSE" : "JSON"} upstream)`, async () => {
			const name = uniqueName("slow");
			const headers = which === "alpha" ? { Authorization: "Bearer ${UPSTREAM_ALPHA_TOKEN}" } : {};
			await admin("PUT", `/servers/${name}`, { url: upstreamUrl(which), headers, timeoutSeconds: 1 });
			const { key } = await createKey();
			const sessionId = await openSession(`/mcp/${name}`, key);
			// A call held at a gate the test never releases: it cannot answer within 1 s.
			const gate = upstreamGate(which);
			const response = await rpc(`/mcp/${name}`, key, sessionId, gate.call(41));
			const reply = await readReply(response);
			expect(reply.id).toBe(41);
			// Inside tools/call, an upstream failure is the tool's result, with the kind in _meta.
			const result = reply.result as {
				isError: boolean;
				content: Array<{ text: string }>;
				_meta: Record<string, unknown>;
			};
			expect(result.isError).toBe(true);
			expect(result._meta["mcp-edge-gateway/error"]).toEqual({ kind: "upstream_timeout", server: name });
			expect(result.content[0]?.text).toMatch(/did not answer within 1 s/);
		});
	}
});
