import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { SessionDO } from "../src/session/session-do.ts";
import { eventually } from "./support/eventually.ts";
import {
	admin,
	createKey,
	gatewayFetch,
	mcpHeaders,
	openSession,
	readReply,
	rpc,
	uniqueName,
} from "./support/gateway.ts";
import { sessionObject } from "./support/session-object.ts";
import { eventReader } from "./support/sse-events.ts";
import { registerServer, upstreamSessionLog } from "./support/upstreams.ts";

/** The tools the client sees at first: mutable's grow, poke and say, and beta's eight. */
const INITIAL_TOOLS = 3 + 8;

interface ClientEvent {
	method?: string;
	params?: { data?: unknown };
}

/**
 * A session on /mcp over mutable and beta, or, with `virtualTools`, on a
 * virtual server of the two that shapes their tools so (a function of
 * mutable's registered name).
 */
async function setup(virtualTools?: (mutable: string) => unknown) {
	const mutable = await registerServer("mutable");
	const beta = await registerServer("beta");
	let path = "/mcp";
	let servers = [mutable, beta];
	if (virtualTools) {
		const virtual = uniqueName("shaped");
		const put = await admin("PUT", `/virtual-servers/${virtual}`, { servers, tools: virtualTools(mutable) });
		expect(put.status).toBe(201);
		path = `/mcp/${virtual}`;
		servers = [virtual];
	}
	const { key } = await createKey({ servers });
	const sessionId = await openSession(path, key);
	const call = async (id: number, method: string, params?: unknown) =>
		readReply(await rpc(path, key, sessionId, { jsonrpc: "2.0", id, method, params }));
	const stub = await sessionObject(sessionId);
	const binding = await runInDurableObject(stub, (instance: SessionDO) => instance.store.readBinding());
	const memberSession = binding?.upstreams[mutable]?.sessionId;
	const response = await gatewayFetch(path, {
		method: "GET",
		headers: mcpHeaders(key, sessionId, { accept: "text/event-stream" }),
	});
	expect(response.status).toBe(200);
	const events = eventReader<ClientEvent>(response.body as ReadableStream<Uint8Array>);
	// The gateway listens on the member's own GET stream while the client listens on its.
	await eventually(
		async () => (await upstreamSessionLog("mutable", memberSession)).some((entry) => entry.method === "GET"),
		"the gateway listening on the member's GET stream",
	);
	const settled = () => runInDurableObject(stub, (instance: SessionDO) => instance.settled());
	const listCalls = async () =>
		(await upstreamSessionLog("mutable", memberSession)).filter((entry) => entry.body?.method === "tools/list").length;
	/**
	 * Has the member send a log message on its GET stream and expects it as the
	 * client's next event: proof that the client was sent nothing before it.
	 */
	let markers = 1_000;
	const expectNothingBefore = async () => {
		const marker = uniqueName("marker");
		await call(markers++, "tools/call", { name: `${mutable}__say`, arguments: { text: marker } });
		expect(await events.next()).toMatchObject({ method: "notifications/message", params: { data: marker } });
	};
	/** Waits until the gateway has relisted the member since `lists`, and that refresh is over. */
	const relisted = async (lists: number) => {
		await eventually(async () => (await listCalls()) > lists, "the gateway relisting the member");
		await settled();
	};
	return { mutable, call, events, settled, listCalls, relisted, expectNothingBefore };
}

describe("aggregate list_changed", () => {
	it("the client gets notifications/tools/list_changed only when its effective catalog really changed", async () => {
		const { mutable, call, events, settled, listCalls, relisted, expectNothingBefore } = await setup();
		const before = await call(1, "tools/list");
		expect(((before.result?.tools ?? []) as unknown[]).length).toBe(INITIAL_TOOLS);

		// list_changed without a change: the gateway relists and tells the client nothing.
		const lists = await listCalls();
		await call(2, "tools/call", { name: `${mutable}__poke`, arguments: { times: 1 } });
		await relisted(lists);
		await expectNothingBefore();

		// A real change: the client is told, once.
		await call(3, "tools/call", { name: `${mutable}__grow`, arguments: {} });
		expect((await events.next()).method).toBe("notifications/tools/list_changed");
		await settled();
		const after = await call(4, "tools/list");
		const names = ((after.result?.tools ?? []) as Array<{ name: string }>).map((tool) => tool.name);
		expect(names).toContain(`${mutable}__grown_1`);
		await expectNothingBefore();
		await events.cancel();
	});

	it("a burst of list_changed notifications causes one refresh, not many", async () => {
		const { mutable, call, events, listCalls, relisted } = await setup();
		await call(1, "tools/list");
		const lists = await listCalls();
		await call(2, "tools/call", { name: `${mutable}__poke`, arguments: { times: 20 } });
		await relisted(lists);
		expect((await listCalls()) - lists).toBe(1);
		await events.cancel();
	});

	it("an unchanged catalog sends the client nothing", async () => {
		const { mutable, call, events, settled, listCalls, relisted, expectNothingBefore } = await setup();
		await call(1, "tools/list");
		const lists = await listCalls();
		await call(2, "tools/call", { name: `${mutable}__poke`, arguments: { times: 3 } });
		await relisted(lists);
		await expectNothingBefore();
		// A real change now is the next event the client sees.
		await call(3, "tools/call", { name: `${mutable}__grow`, arguments: {} });
		expect((await events.next()).method).toBe("notifications/tools/list_changed");
		await settled();
		const tools = await call(4, "tools/list");
		expect(((tools.result?.tools ?? []) as unknown[]).length).toBe(INITIAL_TOOLS + 1);
		await expectNothingBefore();
		await events.cancel();
	});

	it("on a virtual server the comparison follows its shaped view: a new tool it hides sends the client nothing", async () => {
		const { mutable, call, events, listCalls, relisted, expectNothingBefore } = await setup((name) => ({
			exclude: [`${name}__grown_*`],
		}));
		const before = await call(1, "tools/list");
		expect(((before.result?.tools ?? []) as unknown[]).length).toBe(INITIAL_TOOLS);
		const lists = await listCalls();
		await call(2, "tools/call", { name: `${mutable}__grow`, arguments: {} });
		await relisted(lists);
		await expectNothingBefore();
		const after = await call(3, "tools/list");
		expect(((after.result?.tools ?? []) as unknown[]).length).toBe(INITIAL_TOOLS);
		await events.cancel();
	});
});
