/**
 * The benchmark's floor: what the runtime itself costs. The Worker picks a
 * Durable Object by the Mcp-Session-Id header (a fixed one for requests
 * without it, i.e. initialize) and the Durable Object forwards the request,
 * method, headers and body unchanged, to the upstream URL, streaming the
 * response back. No auth, no parsing, no storage.
 *
 * Minimal local types, so this file also type-checks with the scripts'
 * tsconfig (no `cloudflare:workers` import).
 */
interface FloorEnv {
	UPSTREAM_URL: string;
	FLOOR: {
		idFromName(name: string): unknown;
		get(id: unknown): { fetch(request: Request): Promise<Response> };
	};
}

export class FloorDO {
	private readonly env: FloorEnv;

	constructor(_state: unknown, env: FloorEnv) {
		this.env = env;
	}

	fetch(request: Request): Promise<Response> {
		return fetch(this.env.UPSTREAM_URL, request);
	}
}

export default {
	fetch(request: Request, env: FloorEnv): Promise<Response> | Response {
		if (new URL(request.url).pathname === "/healthz") return Response.json({ ok: true });
		const name = request.headers.get("mcp-session-id") ?? "initialize";
		return env.FLOOR.get(env.FLOOR.idFromName(name)).fetch(request);
	},
};
