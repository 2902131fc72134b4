/**
 * The benchmark's Worker-only floor: what the runtime costs a stateless
 * 2026-07-28 request. The Worker forwards each request, method, headers and
 * body unchanged, to the upstream URL with `fetch` and streams the response
 * back. No Durable Object, no auth, no parsing.
 *
 * The comparison for the gateway's stateless path (a 2026-07-28 request to a
 * 2026-07-28 upstream, forwarded by the edge Worker); scripts/bench/floor/ is the
 * one for the 2025 path through a Durable Object.
 */
interface StatelessFloorEnv {
	UPSTREAM_URL: string;
}

export default {
	fetch(request: Request, env: StatelessFloorEnv): Promise<Response> | Response {
		if (new URL(request.url).pathname === "/healthz") return Response.json({ ok: true });
		return fetch(env.UPSTREAM_URL, request);
	},
};
