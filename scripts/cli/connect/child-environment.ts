/**
 * The environment a session's child starts with: the connector's own (the
 * command runs as it would in the connector's shell), without the connector's
 * token, and with each `--env NAME=header:<Header>` set from that header of
 * the session's `initialize` request, the credential the server's `auth` mode
 * produced for the person whose session it is.
 */
import { CliError } from "../admin-client.ts";

/** One `--env NAME=header:<Header>`. */
export interface EnvFromHeader {
	name: string;
	header: string;
}

/** The variable the connector's token may come from; never passed on to a child. */
export const TOKEN_VARIABLE = "MCPGW_CONNECTOR_TOKEN";

const ENV_OPTION = /^([A-Za-z_][A-Za-z0-9_]*)=header:([!#$%&'*+.^_`|~0-9A-Za-z-]+)$/;

/** `--env` values parsed, or a sentence naming the one that is not `NAME=header:<Header>`. */
export function parseEnvFromHeaders(values: readonly string[]): EnvFromHeader[] {
	return values.map((value) => {
		const match = ENV_OPTION.exec(value);
		if (!match?.[1] || !match[2]) {
			throw new CliError(`--env: '${value}' is not NAME=header:<Header> (e.g. GITHUB_TOKEN=header:Authorization).`);
		}
		return { name: match[1], header: match[2] };
	});
}

/**
 * The child's environment. A mapped variable is never inherited from the
 * connector: a caller whose request lacks the header gets the variable unset,
 * not the connector operator's own value standing in for theirs.
 */
export function childEnvironment(
	inherited: NodeJS.ProcessEnv,
	mappings: readonly EnvFromHeader[],
	headers: Headers,
): Record<string, string> {
	const mapped = new Set(mappings.map((mapping) => mapping.name));
	const env: Record<string, string> = {};
	for (const [name, value] of Object.entries(inherited)) {
		if (value !== undefined && name !== TOKEN_VARIABLE && !mapped.has(name)) env[name] = value;
	}
	for (const { name, header } of mappings) {
		const value = headers.get(header);
		if (value !== null) env[name] = value;
	}
	return env;
}
