import type { JSONRPCRequest } from "@modelcontextprotocol/sdk/types.js";
import type { SessionRequest } from "../mcp/client-message.ts";
import { describeError, GatewayError } from "../mcp/gateway-error.ts";
import { calledTool } from "../mcp/message-accessors.ts";
import { TOOLS_CALL } from "../mcp/methods.ts";
import { REPEATABLE_METHODS } from "../mcp/repeatable-methods.ts";
import type { Member } from "./binding.ts";

/** Why a running request was aborted by the gateway rather than the client. */
export class SessionEnded extends Error {}

/** Failures that are an answer, not a transport problem: retrying or backing off would not help. */
export function isFinal(error: unknown): error is GatewayError {
	return (
		error instanceof GatewayError &&
		(error.kind === "upstream_error" ||
			error.kind === "upstream_auth_required" ||
			error.kind === "connection_required" ||
			error.kind === "misconfigured")
	);
}

/** The breaker is open for the member: nothing is sent for `pausedForMs`. */
export function paused(member: Member, pausedForMs: number): GatewayError {
	return new GatewayError(
		"upstream_unavailable",
		`Upstream server '${member.name}' is unavailable: after repeated connection failures the gateway pauses requests to it for ${Math.ceil(pausedForMs / 1000)} s. The request was not sent; retry later.`,
		{ server: member.name },
	);
}

/** No upstream session could be had, so nothing was sent. */
export function notSent(member: Member, error: unknown): GatewayError {
	if (isFinal(error)) return error;
	return new GatewayError(
		"upstream_unavailable",
		`Upstream server '${member.name}' is unavailable, so the request was not sent: ${describeError(error)}. It is safe to retry later.`,
		{ server: member.name, cause: error },
	);
}

/** What a failure's sentence says of the request it ended: its method, and the tool a call called (null for others). */
export interface Attempted {
	method: string;
	tool: string | null;
}

/** A request as its failure's sentence names it. */
export function attempted(request: SessionRequest): Attempted {
	return { method: request.message.method, tool: calledTool(request) };
}

/**
 * What happened to a request that may have reached its upstream, for
 * `mayHaveRun`: the upstream fetch's own words when it knows the request was
 * delivered and then lost (an `outcome_uncertain` error, as a connector that
 * went away gives), else `otherwise`, the gateway's view of the connection.
 */
export function whatLost(error: unknown, otherwise: string): string {
	return error instanceof GatewayError && error.kind === "outcome_uncertain" ? error.message : otherwise;
}

/** The request may have reached the upstream before `what` happened: says whether it may have taken effect. */
export function mayHaveRun(member: Pick<Member, "name">, request: Attempted, what: string): GatewayError {
	const { method } = request;
	if (REPEATABLE_METHODS.has(method)) {
		return new GatewayError("upstream_unavailable", `Upstream server '${member.name}' failed: ${what}.`, {
			server: member.name,
		});
	}
	if (method !== TOOLS_CALL) {
		return new GatewayError(
			"outcome_uncertain",
			`The request ${method} to upstream server '${member.name}' may or may not have taken effect: ${what}. It was not repeated, because only reads are. Check before sending it again; the gateway reconnects to '${member.name}' on the next request.`,
			{ server: member.name },
		);
	}
	const tool = request.tool ?? "the tool";
	return new GatewayError(
		"outcome_uncertain",
		`The call to '${tool}' on upstream server '${member.name}' may or may not have taken effect: ${what}. It was not retried, because the tool is not known to be read-only. Check its effect with a read before retrying; the gateway reconnects to '${member.name}' on the next request.`,
		{ server: member.name },
	);
}

/** A request aborted by the client, or by the session's end (then `signal.reason` is a SessionEnded). */
export function cancelledError(signal: AbortSignal): GatewayError {
	if (signal.reason instanceof SessionEnded) {
		return new GatewayError(
			"session_not_found",
			`The session ended while this request was running (${signal.reason.message}). Initialize a new session.`,
		);
	}
	return new GatewayError("cancelled", "Request cancelled by the client.");
}

/**
 * The upstream refused the caller's own credential (a person's token, an
 * exchanged token, an assertion) for a request that is not sent twice: a
 * fresh one was fetched for the next request, and this one was not performed.
 */
export function callerRefused(member: Member, message: JSONRPCRequest): GatewayError {
	return new GatewayError(
		"upstream_auth_required",
		`Upstream server '${member.name}' refused your credentials for ${message.method}, so it was not performed; the gateway has renewed them. Send the request again.`,
		{ server: member.name },
	);
}

export function tooLarge(member: Member, limit: number): GatewayError {
	return new GatewayError(
		"reply_too_large",
		`Upstream server '${member.name}' sent a reply larger than ${limit} bytes, which the gateway does not relay.`,
		{ server: member.name },
	);
}
