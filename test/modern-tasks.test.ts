import { describe, expect, it } from "vitest";
import { createKey } from "./support/gateway.ts";
import { ENVELOPE, modernPost } from "./support/modern.ts";
import { registerServer, upstreamLog } from "./support/upstreams.ts";

/**
 * The tasks extension of 2026-07-28 (SEP-2663) at the edge: its methods are
 * refused without the extension, and an id the gateway did not mint for the
 * caller is unknown. Nothing of either reaches an upstream or a session.
 */

const TASKS = "io.modelcontextprotocol/tasks";
/** The envelope of a client that declares the tasks extension on its requests. */
const TASKING_ENVELOPE = {
	...ENVELOPE,
	"io.modelcontextprotocol/clientCapabilities": { extensions: { [TASKS]: {} } },
};

function taskRequest(
	method: string,
	params: Record<string, unknown>,
	envelope: object = TASKING_ENVELOPE,
): { body: { id: string; method: string; params: object }; headers: Record<string, string> } {
	const taskId = params.taskId;
	const headers: Record<string, string> = typeof taskId === "string" ? { "mcp-name": taskId } : {};
	return { body: { id: `${method}-1`, method, params: { ...params, _meta: envelope } }, headers };
}

/** Every request the upstream's log holds that names `taskId` anywhere. */
async function upstreamMentions(taskId: string): Promise<number> {
	return (await upstreamLog("modern")).filter((entry) => JSON.stringify(entry.body ?? {}).includes(taskId)).length;
}

describe("2026-07-28 task methods at the edge", () => {
	for (const method of ["tasks/get", "tasks/update", "tasks/cancel"]) {
		it(`${method} without the tasks extension in the request's client capabilities is refused with -32021 naming it, and never reaches the upstream`, async () => {
			const server = await registerServer("modern");
			const { key } = await createKey({ servers: [server] });
			const taskId = `no-extension-${crypto.randomUUID()}`;
			const { body, headers } = taskRequest(method, { taskId, inputResponses: {} }, ENVELOPE);
			const response = await modernPost(`/mcp/${server}`, key, body, headers);
			expect(response.status).toBe(400);
			const reply = (await response.json()) as { id: unknown; error: { code: number; message: string; data: object } };
			expect(reply.id).toBe(body.id);
			expect(reply.error.code).toBe(-32021);
			expect(reply.error.message).toContain(`${method} needs the ${TASKS} extension`);
			expect(reply.error.data).toMatchObject({ requiredCapabilities: { extensions: { [TASKS]: {} } } });
			expect(await upstreamMentions(taskId)).toBe(0);
		});
	}

	it("a task id the gateway never minted is unknown (-32602), for every task method, and never reaches the upstream", async () => {
		const server = await registerServer("modern");
		const { key } = await createKey({ servers: [server] });
		const taskId = `never-minted-${crypto.randomUUID()}`;
		for (const method of ["tasks/get", "tasks/update", "tasks/cancel"]) {
			const { body, headers } = taskRequest(method, { taskId, inputResponses: {} });
			const response = await modernPost(`/mcp/${server}`, key, body, headers);
			expect(response.status).toBe(400);
			const reply = (await response.json()) as { error: { code: number; message: string } };
			expect(reply.error.code).toBe(-32602);
			expect(reply.error.message).toContain(`task '${taskId}' is unknown`);
		}
		expect(await upstreamMentions(taskId)).toBe(0);
	});

	it("a forged upstream task id (the gateway's prefix, a MAC that is not its own) is unknown and never reaches the upstream", async () => {
		const server = await registerServer("modern");
		const { key } = await createKey({ servers: [server] });
		const forged = `up.${btoa(JSON.stringify({ s: server, t: "stolen" }))}.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA`;
		const { body, headers } = taskRequest("tasks/get", { taskId: forged });
		const reply = (await (await modernPost(`/mcp/${server}`, key, body, headers)).json()) as {
			error: { code: number };
		};
		expect(reply.error.code).toBe(-32602);
		expect(await upstreamMentions("stolen")).toBe(0);
	});

	it("a task method without a taskId is refused with -32602 saying it needs one", async () => {
		const server = await registerServer("modern");
		const { key } = await createKey({ servers: [server] });
		const { body, headers } = taskRequest("tasks/get", {});
		const response = await modernPost(`/mcp/${server}`, key, body, headers);
		expect(response.status).toBe(400);
		const reply = (await response.json()) as { error: { code: number; message: string } };
		expect(reply.error).toMatchObject({ code: -32602, message: "Invalid params: tasks/get needs a taskId string." });
	});
});
