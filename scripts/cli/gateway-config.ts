/**
 * `gateway.config.json`: the registry as code. Each section is keyed by name
 * and holds exactly the body the admin API takes for it, parsed by the same
 * zod schemas (src/registry/), so a field added there reaches the file, its
 * JSON Schema (`npm run config-schema`) and `mcpgw plan` at once. Keys are
 * declarations only: their secrets are made by `mcpgw apply`, never written here.
 */
import { readFileSync } from "node:fs";
import { z } from "zod";
import { PolicyInputSchema } from "../../src/governance/policy-schema.ts";
import { AccessRuleInputSchema, RuleNameSchema } from "../../src/registry/access-rules.ts";
import { GuardInputSchema, GuardNameSchema } from "../../src/registry/guard-records.ts";
import { PolicyNameSchema } from "../../src/registry/policy-records.ts";
import {
	describeIssues,
	KeyInputSchema,
	ServerInputSchema,
	ServerNameSchema,
	VirtualServerInputSchema,
} from "../../src/registry/schemas.ts";
import { CliError } from "./admin-client.ts";

/** A key's declaration: what `POST /admin/keys` takes, its name being the section's key. */
export const KeyDeclarationSchema = KeyInputSchema.omit({ name: true });

export const KeyNameSchema = z.string().min(1).max(100);

export const GatewayConfigSchema = z.strictObject({
	/** The JSON Schema editors complete from (`gateway.config.schema.json`). */
	$schema: z.string().optional(),
	servers: z.record(ServerNameSchema, ServerInputSchema).default({}),
	virtualServers: z.record(ServerNameSchema, VirtualServerInputSchema).default({}),
	accessRules: z.record(RuleNameSchema, AccessRuleInputSchema).default({}),
	policies: z.record(PolicyNameSchema, PolicyInputSchema).default({}),
	guards: z.record(GuardNameSchema, GuardInputSchema).default({}),
	keys: z.record(KeyNameSchema, KeyDeclarationSchema).default({}),
});
export type GatewayConfig = z.output<typeof GatewayConfigSchema>;

/**
 * The sections, in the order apply makes them (prune removes in reverse):
 * policies and guards after what their `applies` names, keys last.
 */
export const KINDS = ["servers", "virtualServers", "accessRules", "policies", "guards", "keys"] as const;
export type Kind = (typeof KINDS)[number];

/** The schema of each section's entries, for parsing what the gateway holds into the same shape. */
export const ENTRY_SCHEMAS = {
	servers: ServerInputSchema,
	virtualServers: VirtualServerInputSchema,
	accessRules: AccessRuleInputSchema,
	policies: PolicyInputSchema,
	guards: GuardInputSchema,
	keys: KeyDeclarationSchema,
} as const satisfies Record<Kind, z.ZodType>;

/** Reads and parses a config file; an invalid one fails with the zod issues and their paths. */
export function readConfig(path: string): GatewayConfig {
	let text: string;
	try {
		text = readFileSync(path, "utf8");
	} catch (error) {
		throw new CliError(`Cannot read ${path}: ${(error as Error).message}.`, { cause: error });
	}
	let value: unknown;
	try {
		value = JSON.parse(text);
	} catch (error) {
		throw new CliError(`${path} is not valid JSON: ${(error as Error).message}.`, { cause: error });
	}
	const parsed = GatewayConfigSchema.safeParse(value);
	if (!parsed.success) {
		throw new CliError(`${path} is not a valid gateway config: ${describeIssues(parsed.error, "the file")}.`);
	}
	return parsed.data;
}

/** The JSON Schema of the file, for `$schema` and editors: the input side (defaults are optional). */
export function configJsonSchema(): Record<string, unknown> {
	return {
		...z.toJSONSchema(GatewayConfigSchema, { io: "input", unrepresentable: "any" }),
		title: "mcp-edge-gateway configuration (mcpgw plan / apply / export)",
	};
}
