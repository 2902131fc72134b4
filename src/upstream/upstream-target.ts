import { GatewayError } from "../mcp/gateway-error.ts";

/** Everything needed to send a request to one upstream server, credentials resolved. */
export interface UpstreamTarget {
	name: string;
	url: string;
	headers: Record<string, string>;
	timeoutMs: number;
}

/** The parts of a server record the upstream layer needs; header values may hold `${NAME}`. */
export interface UpstreamServerConfig {
	name: string;
	url: string;
	headers: Record<string, string>;
	timeoutSeconds: number | null;
}

const REFERENCE = /\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g;

/**
 * Resolves `${NAME}` references in header values against Worker secrets and
 * vars, at send time, so rotating a secret needs no registry change. A missing
 * reference is an operator error, reported without the header's value.
 */
export function resolveTarget(
	server: UpstreamServerConfig,
	vars: Record<string, unknown>,
	defaultTimeoutMs: number,
): UpstreamTarget {
	const headers: Record<string, string> = {};
	for (const [header, template] of Object.entries(server.headers)) {
		headers[header] = template.replace(REFERENCE, (_match, name: string) => {
			const value = vars[name];
			if (typeof value !== "string") {
				throw new GatewayError(
					"misconfigured",
					`Upstream server '${server.name}' is misconfigured: header ${header} references \${${name}}, which is not set as a Worker secret or var.`,
					{ server: server.name },
				);
			}
			return value;
		});
	}
	return {
		name: server.name,
		url: server.url,
		headers,
		timeoutMs: server.timeoutSeconds === null ? defaultTimeoutMs : server.timeoutSeconds * 1000,
	};
}

/** The URL without credentials or query, for messages and logs. */
export function displayUrl(url: string): string {
	const parsed = new URL(url);
	return `${parsed.protocol}//${parsed.host}${parsed.pathname}`;
}
