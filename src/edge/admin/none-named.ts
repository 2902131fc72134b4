import type { Env } from "../../env.ts";
import { GatewayError } from "../../mcp/gateway-error.ts";
import { quotedName } from "../../registry/quoted-names.ts";
import { registryStub } from "../../registry/registry-stub.ts";
import type { NamedKind } from "../../registry/tables/registry-tables.ts";

/** What each kind of named record is called in a refusal. */
const WORDS: Record<NamedKind, string> = {
	servers: "server",
	virtualServers: "virtual server",
	accessRules: "access rule",
	policies: "policy",
	guards: "guard",
};

/**
 * The 404 for a name nothing holds, with the existing name it most likely meant:
 * "Not Found: no server named 'demoo' (did you mean 'demo'?)." One more registry
 * read, on this path only.
 */
export async function noneNamed(env: Env, kind: NamedKind, name: string): Promise<GatewayError> {
	const like = await registryStub(env).nameLike(kind, name);
	return new GatewayError("not_found", `Not Found: no ${WORDS[kind]} named ${quotedName(name, like)}.`);
}
