/**
 * What `npm run deploy-check` asks of wrangler.toml before a deploy: the bindings the gateway cannot
 * run without, the secrets kept out of `[vars]`, the hosts it will answer on. Each finding is a
 * sentence naming the setting and what to do; problems fail the check, warnings do not.
 */
import type { Unstable_Config } from "wrangler";
import { hostAllowed } from "../../src/primitives/host-allowed.ts";

/** The Durable Object bindings src/ reaches by name, and the class each must name. */
const DURABLE_OBJECTS = {
	SESSIONS: "SessionDO",
	REGISTRY: "RegistryDO",
	KEY_SESSIONS: "KeySessionsDO",
	VAULTS: "TokenVaultDO",
} as const;

/** The KV namespaces: the registry's read path, and the authorization server's grants and tokens. */
const KV_NAMESPACES = ["REGISTRY_KV", "OAUTH_KV"] as const;

/** The rate-limit bindings; without one that limit is off (the gateway still runs). */
const RATE_LIMITS = ["KEY_RATE_LIMITER", "KEY_RATE_LIMITER_HIGH", "AUTH_FAILURE_LIMITER", "OAUTH_LIMITER"] as const;

/** The secrets without which nothing is served (admin API, sessions, keys): `wrangler secret put`, never `[vars]`. */
export const REQUIRED_SECRETS = ["ADMIN_TOKEN", "SESSION_SECRET", "KEY_SECRET"] as const;

/** Secrets of optional features: also never `[vars]`. */
const OPTIONAL_SECRETS = [
	"OIDC_CLIENT_SECRET",
	"TOKEN_VAULT_KEY",
	"TOKEN_VAULT_KEY_PREVIOUS",
	"IDENTITY_SIGNING_KEY",
	"IDENTITY_SIGNING_KEY_PREVIOUS",
	"OTEL_EXPORTER_OTLP_HEADERS",
	"OTEL_EXPORTER_OTLP_TRACES_HEADERS",
	"OTEL_EXPORTER_OTLP_METRICS_HEADERS",
] as const;

export interface Findings {
	problems: string[];
	warnings: string[];
}

export type CheckedConfig = Pick<
	Unstable_Config,
	"durable_objects" | "migrations" | "kv_namespaces" | "ratelimits" | "vars" | "routes" | "route" | "workers_dev"
>;

export function checkConfig(config: CheckedConfig): Findings {
	const findings: Findings = { problems: [], warnings: [] };
	checkDurableObjects(config, findings);
	checkKvNamespaces(config, findings);
	checkRateLimits(config, findings);
	checkSecretsAreNotVars(config, findings);
	checkHosts(config, findings);
	return findings;
}

function checkDurableObjects(config: CheckedConfig, { problems }: Findings): void {
	for (const [name, className] of Object.entries(DURABLE_OBJECTS)) {
		const binding = config.durable_objects.bindings.find((candidate) => candidate.name === name);
		if (binding === undefined) {
			problems.push(
				`Durable Object binding ${name} is missing: add [[durable_objects.bindings]] name = "${name}", class_name = "${className}".`,
			);
		} else if (binding.class_name !== className) {
			problems.push(`Durable Object binding ${name} names class ${binding.class_name}; the gateway's is ${className}.`);
		}
	}
}

function checkKvNamespaces(config: CheckedConfig, { problems }: Findings): void {
	for (const name of KV_NAMESPACES) {
		if (!config.kv_namespaces.some((namespace) => namespace.binding === name)) {
			problems.push(
				`KV namespace ${name} is missing: add [[kv_namespaces]] binding = "${name}" (wrangler deploy creates it, or \`npx wrangler kv namespace create ${name}\` and put its id there).`,
			);
		}
	}
}

function checkRateLimits(config: CheckedConfig, { problems, warnings }: Findings): void {
	for (const name of RATE_LIMITS) {
		if (!config.ratelimits.some((binding) => binding.name === name)) {
			warnings.push(`Rate limit ${name} is not bound: that limit is off in this deployment.`);
		}
	}
	const owners = new Map<string, string>();
	for (const binding of config.ratelimits) {
		const other = owners.get(binding.namespace_id);
		if (other !== undefined) {
			problems.push(
				`Rate limits ${other} and ${binding.name} share namespace_id ${binding.namespace_id}, so they share one counter: give each its own (unique in the Cloudflare account).`,
			);
		}
		owners.set(binding.namespace_id, binding.name);
	}
	const period = config.vars.RATE_LIMIT_PERIOD_SECONDS;
	for (const binding of config.ratelimits) {
		if (period !== undefined && String(binding.simple.period) !== String(period)) {
			problems.push(
				`Rate limit ${binding.name} counts per ${binding.simple.period} s but RATE_LIMIT_PERIOD_SECONDS is ${String(period)}: 429s would send a wrong Retry-After; make them equal.`,
			);
		}
	}
}

function checkSecretsAreNotVars(config: CheckedConfig, { problems }: Findings): void {
	const names = Object.keys(config.vars);
	const secrets = new Set<string>([...REQUIRED_SECRETS, ...OPTIONAL_SECRETS]);
	for (const name of names.filter((candidate) => secrets.has(candidate))) {
		problems.push(
			`${name} is in [vars], where it is uploaded in plain text and shown in the dashboard: remove it and run \`openssl rand -base64 32 | npx wrangler secret put ${name}\` (or put the value you have).`,
		);
	}
}

/** A route's host: its pattern up to the first `/`, lowercase. */
function routeHost(route: string | { pattern: string }): string {
	const pattern = typeof route === "string" ? route : route.pattern;
	return (pattern.split("/")[0] ?? "").toLowerCase();
}

function checkHosts(config: CheckedConfig, { problems, warnings }: Findings): void {
	const listed = String(config.vars.ALLOWED_HOSTS ?? "")
		.split(",")
		.map((host) => host.trim().toLowerCase())
		.filter((host) => host !== "");
	const routes = [...(config.routes ?? []), ...(config.route === undefined ? [] : [config.route])];
	for (const host of routes.map(routeHost)) {
		// A wildcard route (`*.example.com/*`) is served when ALLOWED_HOSTS lists the same wildcard.
		if (!listed.some((allowed) => allowed === host || hostAllowed(host, allowed))) {
			problems.push(
				`Route host ${host} is not in ALLOWED_HOSTS, so every request to it would get 403: add it to ALLOWED_HOSTS in [vars].`,
			);
		}
	}
	const workersDev = config.workers_dev ?? routes.length === 0;
	if (workersDev && !listed.some((host) => host.endsWith(".workers.dev"))) {
		warnings.push(
			"ALLOWED_HOSTS names no *.workers.dev host: the workers.dev address (<name>.<your subdomain>.workers.dev, printed by the first deploy) answers 403 until you add it to [vars] and deploy again.",
		);
	}
}

/**
 * Every class the built Worker exports (src/index.ts exports the Worker and its Durable Object
 * classes, nothing else) needs a binding, or nothing reaches it, and a migration that makes it
 * SQLite-backed, or the upload is refused (and key-value-backed objects need Workers Paid). Asked of
 * the build, so a Durable Object added to src/ is checked without a list here.
 */
export function checkExportedClasses(config: CheckedConfig, exported: readonly string[]): string[] {
	const sqliteClasses = new Set(config.migrations.flatMap((migration) => migration.new_sqlite_classes ?? []));
	const bound = new Set(config.durable_objects.bindings.map((binding) => binding.class_name));
	const problems: string[] = [];
	for (const className of exported.filter((name) => name !== "default")) {
		if (!bound.has(className)) {
			problems.push(
				`The Worker exports ${className} but no [[durable_objects.bindings]] names it: add one with class_name = "${className}".`,
			);
		}
		if (!sqliteClasses.has(className)) {
			problems.push(
				`${className} is in no migration's new_sqlite_classes: add a [[migrations]] entry with a new tag and new_sqlite_classes = ["${className}"].`,
			);
		}
	}
	return problems;
}
