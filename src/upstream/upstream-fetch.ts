import { describeError, GatewayError } from "../mcp/gateway-error.ts";
import { resendableAfterRefusal } from "../mcp/repeatable-methods.ts";
import { ClientOperation } from "../telemetry/client-operation.ts";
import type { Deadline } from "./deadline.ts";
import { upstreamFetch } from "./served-origins.ts";
import { displayUrl, type UpstreamTarget } from "./upstream-target.ts";

export type FetchLike = (input: string, init: RequestInit) => Promise<Response>;

/**
 * One HTTP request to an upstream. Redirects are never followed: they would
 * carry the configured credentials and the call to wherever the upstream
 * points, so a 3xx is an `upstream_error`. A failure names the server and its
 * kind for the client; the host, path and raw error go to the operator's log.
 */
export async function fetchUpstream(
	target: UpstreamTarget,
	init: { method: string; headers: Headers; body?: string | undefined },
	deadline: Deadline,
	fetcher: FetchLike = upstreamFetch,
	/** The JSON-RPC method sent (none for a GET or DELETE): whether a refusal may be sent again. */
	rpcMethod?: string,
): Promise<Response> {
	// Each MCP message sent is the conventions' CLIENT span (telemetry on), its context in the message's _meta.
	const operation = ClientOperation.of(target.traced, target.url, init.body, init.headers.get("mcp-protocol-version"));
	if (!operation) return fetchCredentialed(target, init, deadline, fetcher, rpcMethod);
	const headers = new Headers(init.headers);
	for (const [name, value] of Object.entries(operation.headers)) headers.set(name, value);
	try {
		const response = await fetchCredentialed(
			target,
			{ ...init, headers, body: operation.body },
			deadline,
			fetcher,
			rpcMethod,
		);
		return operation.answered(response);
	} catch (error) {
		operation.failed(error);
		throw error;
	}
}

/** The request with the caller's credentials, sent once more after a refusal when that is safe. */
async function fetchCredentialed(
	target: UpstreamTarget,
	init: { method: string; headers: Headers; body?: string | undefined },
	deadline: Deadline,
	fetcher: FetchLike,
	rpcMethod: string | undefined,
): Promise<Response> {
	const { credentials } = target;
	if (!credentials) return fetchOnce(target, init, deadline, fetcher);
	let given = await credentials.headers();
	let response = await fetchOnce(target, withHeaders(init, given), deadline, fetcher);
	if (response.status !== 401) return response;
	// Refused before it was performed. A fresh credential is fetched either way (the next request
	// needs it); only a request that may be sent twice is sent again with it (invariant "At-most-once upstream").
	const fresh = await credentials.refused(given);
	if (!fresh || !resendableAfterRefusal(rpcMethod)) return response;
	await response.body?.cancel();
	given = await credentials.headers();
	response = await fetchOnce(target, withHeaders(init, given), deadline, fetcher);
	if (response.status === 401) await credentials.refused(given);
	return response;
}

/** The request's headers with the caller's credentials set over them (they replace a configured `Authorization`). */
function withHeaders(
	init: { method: string; headers: Headers; body?: string | undefined },
	credentials: Record<string, string>,
): { method: string; headers: Headers; body?: string | undefined } {
	const headers = new Headers(init.headers);
	for (const [name, value] of Object.entries(credentials)) headers.set(name, value);
	return { ...init, headers };
}

async function fetchOnce(
	target: UpstreamTarget,
	init: { method: string; headers: Headers; body?: string | undefined },
	deadline: Deadline,
	fetcher: FetchLike,
): Promise<Response> {
	let response: Response;
	try {
		response = await fetcher(target.url, { ...init, signal: deadline.signal, redirect: "manual" });
	} catch (error) {
		if (deadline.signal.aborted) throw upstreamTimeout(target, error);
		// A served origin (a connector server) says itself why it could not carry the request.
		if (error instanceof GatewayError) throw error;
		console.warn(`upstream ${target.name}: ${init.method} ${displayUrl(target.url)} failed: ${describeError(error)}`);
		throw new GatewayError("upstream_unavailable", `Upstream server '${target.name}' is unreachable.`, {
			server: target.name,
			cause: error,
		});
	}
	if (response.status >= 300 && response.status < 400) {
		await response.body?.cancel();
		console.warn(
			`upstream ${target.name}: ${init.method} ${displayUrl(target.url)} answered a redirect (HTTP ${response.status}), not followed`,
		);
		throw new GatewayError(
			"upstream_error",
			`Upstream server '${target.name}' answered with a redirect (HTTP ${response.status}), which the gateway does not follow; its registered URL may need updating.`,
			{ server: target.name },
		);
	}
	return response;
}

/** The upstream did not answer within its timeout. */
export function upstreamTimeout(target: UpstreamTarget, cause: unknown): GatewayError {
	return new GatewayError(
		"upstream_timeout",
		`Upstream server '${target.name}' did not answer within ${target.timeoutMs / 1000} s.`,
		{ server: target.name, cause },
	);
}
