import type { CompiledScheme, SecurityRequirement } from "../registry/openapi-records.ts";
import type { DocumentSecurityScheme } from "./document-shape.ts";

/*
 * The document's `securitySchemes` as the gateway places credentials:
 * API keys (header, query, cookie), HTTP bearer and basic, OAuth 2 flows and
 * OpenID Connect (the person's token as a bearer). Others (mutualTLS, HTTP
 * digest…) are left out, each with a note, and so are the requirements that
 * name them: a call cannot meet them through the gateway.
 */

const FLOW_KEYS = ["authorizationCode", "clientCredentials", "implicit", "password"] as const;

/** The schemes the gateway can fill, and a note for each it cannot. */
export function compiledSchemes(schemes: Record<string, DocumentSecurityScheme> | undefined): {
	schemes: Record<string, CompiledScheme>;
	notes: string[];
} {
	const compiled: Record<string, CompiledScheme> = {};
	const notes: string[] = [];
	for (const [name, scheme] of Object.entries(schemes ?? {})) {
		const result = compiledScheme(scheme);
		if (typeof result === "string") notes.push(`Security scheme ${JSON.stringify(name)} is left out: ${result}.`);
		else compiled[name] = result;
	}
	return { schemes: compiled, notes };
}

function compiledScheme(scheme: DocumentSecurityScheme): CompiledScheme | string {
	switch (scheme.type) {
		case "apiKey": {
			const where = scheme.in;
			if (where !== "header" && where !== "query" && where !== "cookie")
				return "an API key must be in a header, query or cookie";
			if (scheme.name === undefined || scheme.name === "") return "an API key needs a name";
			return { type: "apiKey", in: where, name: scheme.name };
		}
		case "http": {
			const kind = scheme.scheme?.toLowerCase();
			if (kind === "bearer" || kind === "basic") return { type: "http", scheme: kind };
			return `HTTP scheme ${JSON.stringify(scheme.scheme ?? "")} is not supported (bearer and basic are)`;
		}
		case "oauth2": {
			const flows: Extract<CompiledScheme, { type: "oauth2" }>["flows"] = {};
			for (const key of FLOW_KEYS) {
				const flow = scheme.flows?.[key];
				if (flow === undefined) continue;
				flows[key] = {
					...(flow.authorizationUrl === undefined ? {} : { authorizationUrl: flow.authorizationUrl }),
					...(flow.tokenUrl === undefined ? {} : { tokenUrl: flow.tokenUrl }),
					scopes: flow.scopes ?? {},
				};
			}
			return { type: "oauth2", flows };
		}
		case "openIdConnect":
			if (scheme.openIdConnectUrl === undefined) return "OpenID Connect needs an openIdConnectUrl";
			return { type: "openIdConnect", openIdConnectUrl: scheme.openIdConnectUrl };
		default:
			return `type ${JSON.stringify(scheme.type)} is not supported (apiKey, http, oauth2 and openIdConnect are)`;
	}
}

/** Requirements whose schemes are all compiled: one that names a left-out or unknown scheme cannot be met. */
export function meetableRequirements(
	requirements: readonly SecurityRequirement[],
	schemes: Record<string, CompiledScheme>,
): SecurityRequirement[] {
	return requirements.filter((requirement) => Object.keys(requirement).every((name) => Object.hasOwn(schemes, name)));
}
