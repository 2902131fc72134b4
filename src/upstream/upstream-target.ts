import { GatewayError } from "../mcp/gateway-error.ts";
import type { TracedRequests } from "../telemetry/client-operation.ts";

/**
 * What a request carries for the person or key it is made for, on top of the
 * server's configured headers (a person's token, an identity assertion, an
 * exchanged token): the credentials layer builds it (`credentialsFor`), the
 * upstream layer only sends it.
 */
export interface UpstreamCredentials {
	/** The headers for the next request; throws a GatewayError when there is none to send (e.g. not connected). */
	headers(): Promise<Record<string, string>>;
	/**
	 * The upstream refused `given` (HTTP 401): true when a fresh credential can
	 * be tried, once; false when nothing else can be sent. May throw what
	 * `headers` throws (the person must connect again).
	 */
	refused(given: Record<string, string>): Promise<boolean>;
}

/** Everything needed to send a request to one upstream server, credentials resolved. */
export interface UpstreamTarget {
	name: string;
	url: string;
	headers: Record<string, string>;
	/** The caller's own credentials, when the server's auth mode is not "operator". */
	credentials?: UpstreamCredentials | undefined;
	timeoutMs: number;
	/** Cap on one reply or SSE event, and on one list with all its pages. */
	maxReplyBytes: number;
	/** Where its requests' CLIENT spans go (telemetry on); absent: untraced. */
	traced?: TracedRequests | undefined;
}

/** The parts of a server record the upstream layer needs; header values may hold `${UPSTREAM_NAME}`. */
export interface UpstreamServerConfig {
	name: string;
	url: string;
	headers: Record<string, string>;
	timeoutSeconds: number | null;
}

export interface TargetLimits {
	defaultTimeoutMs: number;
	maxReplyBytes: number;
	allowHttpUpstreams: boolean;
}

/** The limits every upstream request is made under, from the gateway's settings. */
export function targetLimitsOf(settings: {
	upstreamTimeoutMs: number;
	maxReplyBytes: number;
	allowHttpUpstreams: boolean;
}): TargetLimits {
	return {
		defaultTimeoutMs: settings.upstreamTimeoutMs,
		maxReplyBytes: settings.maxReplyBytes,
		allowHttpUpstreams: settings.allowHttpUpstreams,
	};
}

/** A reference that resolves: only secrets named UPSTREAM_..., never the gateway's own. */
const UPSTREAM_REFERENCE = /^UPSTREAM_[A-Z0-9_]+$/;
const ANY_REFERENCE = /\$\{([^}]*)\}/g;

/**
 * Resolves `${UPSTREAM_NAME}` references in header values against Worker
 * secrets and vars, at send time, so rotating a secret needs no registry
 * change. Any other reference, or one that is not set, is an operator error:
 * the client is told the server is misconfigured, and only the operator's log
 * names the header and the variable. A plain-http URL is refused unless the
 * gateway allows it (local development), also for servers registered before
 * that rule.
 */
export function resolveTarget(
	server: UpstreamServerConfig,
	vars: Record<string, unknown>,
	limits: TargetLimits,
): UpstreamTarget {
	const resolved = targetOrProblem(server, vars, limits);
	if ("target" in resolved) return resolved.target;
	console.error(`upstream ${server.name}: misconfigured: ${resolved.problem}`);
	throw new GatewayError(
		"misconfigured",
		`Upstream server '${server.name}' is misconfigured, so the gateway cannot reach it; the operator's logs say why.`,
		{ server: server.name },
	);
}

/**
 * The target as `resolveTarget` builds it, or why it cannot be built, in a
 * sentence for the operator only (it names headers and variables, never a
 * value): what the admin API's check of a server reports.
 */
export function targetOrProblem(
	server: UpstreamServerConfig,
	vars: Record<string, unknown>,
	limits: TargetLimits,
): { target: UpstreamTarget } | { problem: string } {
	if (new URL(server.url).protocol === "http:" && !limits.allowHttpUpstreams) {
		return { problem: "its URL is plain http and ALLOW_HTTP_UPSTREAMS is not true" };
	}
	const headers: Record<string, string> = {};
	for (const [header, template] of Object.entries(server.headers)) {
		const resolved = resolveReferences(template, vars);
		if ("problem" in resolved) return { problem: `header ${header} ${resolved.problem}` };
		headers[header] = resolved.value;
	}
	return {
		target: {
			name: server.name,
			url: server.url,
			headers,
			timeoutMs: server.timeoutSeconds === null ? limits.defaultTimeoutMs : server.timeoutSeconds * 1000,
			maxReplyBytes: limits.maxReplyBytes,
		},
	};
}

/**
 * `template` with its `${UPSTREAM_NAME}` references replaced by the Worker's
 * secrets and vars, or why it cannot be (a clause for the operator, naming
 * the variable, never a value): header values, and the client secrets of
 * servers' `auth`, resolve the same way.
 */
export function resolveReferences(
	template: string,
	vars: Record<string, unknown>,
): { value: string } | { problem: string } {
	for (const [, name = ""] of template.matchAll(ANY_REFERENCE)) {
		if (!UPSTREAM_REFERENCE.test(name)) {
			return { problem: `references \${${name}}, which is not an UPSTREAM_ secret and is never resolved` };
		}
		if (typeof vars[name] !== "string") {
			return { problem: `references \${${name}}, which is not set as a Worker secret or var` };
		}
	}
	return { value: template.replace(ANY_REFERENCE, (_match, name: string) => String(vars[name])) };
}

/** Whether `value` is exactly one `${UPSTREAM_NAME}` reference (a secret kept out of the registry). */
export function isUpstreamReference(value: string): boolean {
	return /^\$\{UPSTREAM_[A-Z0-9_]+\}$/.test(value);
}

/** The URL without credentials or query, for operators' logs. */
export function displayUrl(url: string): string {
	const parsed = new URL(url);
	return `${parsed.protocol}//${parsed.host}${parsed.pathname}`;
}

/** The URL with every query value masked and no credentials, for admin listings. */
export function maskedUrl(url: string): string {
	const parsed = new URL(url);
	parsed.username = "";
	parsed.password = "";
	for (const name of new Set(parsed.searchParams.keys())) parsed.searchParams.set(name, "***");
	return parsed.toString();
}
