/**
 * Which HTTP stream a message from a stdio server belongs on. Over stdio a
 * server's notifications and requests carry no link to the call they are part
 * of; streamable HTTP sends them on that call's SSE stream. The routes are
 * read from the messages themselves: progress by its token (exact), anything
 * else a server says while calls are open on the most recent of them (the
 * call a server asks or logs about is the one it is running), and on the
 * listening (GET) stream when no call is open.
 */
import {
	isJSONRPCErrorResponse,
	isJSONRPCRequest,
	isJSONRPCResultResponse,
	type JSONRPCMessage,
	type RequestId,
} from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";

const ProgressTokenSchema = z.union([z.string(), z.number()]);
const ProgressParamsSchema = z.object({ progressToken: ProgressTokenSchema }).loose();
const MetaParamsSchema = z.object({ _meta: z.object({ progressToken: ProgressTokenSchema }).loose() }).loose();

export class MessageRoutes {
	/** Client requests awaiting their response, oldest first. */
	readonly #open: RequestId[] = [];
	/** progressToken → the request that carried it. */
	readonly #progress = new Map<string | number, RequestId>();

	/** A message from the client (the gateway) to the server. */
	fromClient(message: JSONRPCMessage): void {
		if (!isJSONRPCRequest(message)) return;
		this.#open.push(message.id);
		const meta = MetaParamsSchema.safeParse(message.params);
		if (meta.success) this.#progress.set(meta.data._meta.progressToken, message.id);
	}

	/** A message from the server: the request id its stream is keyed by, undefined for the listening stream. */
	fromServer(message: JSONRPCMessage): RequestId | undefined {
		if (isJSONRPCResultResponse(message) || isJSONRPCErrorResponse(message)) {
			const at = message.id === undefined ? -1 : this.#open.indexOf(message.id);
			if (at >= 0) this.#open.splice(at, 1);
			for (const [token, id] of this.#progress) if (id === message.id) this.#progress.delete(token);
			return message.id;
		}
		if ("method" in message && message.method === "notifications/progress") {
			const params = ProgressParamsSchema.safeParse(message.params);
			const owner = params.success ? this.#progress.get(params.data.progressToken) : undefined;
			if (owner !== undefined) return owner;
		}
		return this.#open.at(-1);
	}
}
