/**
 * The registry's resources, one command each: servers, connector-tokens,
 * virtual-servers, keys, rules (access rules), policies, guards, connections and tools. Each request is the
 * admin API's (docs/admin-api.md); what it refuses is reported in its words.
 */
import { readFileSync } from "node:fs";
import { type Command, Option } from "commander";
import { closestName } from "../../src/primitives/closest-name.ts";
import { quotedName } from "../../src/registry/quoted-names.ts";
import { CliError } from "./admin-client.ts";
import { clientFor, collect, integerOption, parseJsonOption, print } from "./command-context.ts";
import type { ListedKey } from "./config-state.ts";
import { details, table } from "./output.ts";

type Row = Record<string, unknown>;

/** `--body '{...}'` under the flags: the flags win, so a one-off field needs no JSON. */
function bodyFrom(options: { body?: string }, fields: Record<string, unknown>): Record<string, unknown> {
	const base = options.body === undefined ? {} : parseJsonOption("--body", options.body);
	if (base === null || typeof base !== "object" || Array.isArray(base))
		throw new CliError("--body: must be a JSON object.");
	const given = Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined));
	return { ...(base as Record<string, unknown>), ...given };
}

/** The tool disclosure options of an aggregate's definition (a key's `/mcp`, an access rule's, a virtual server). */
function disclosureOptions(command: Command): Command {
	return command
		.option(
			"--disclosure <mode>",
			'"full" (every tool listed), "search" (search_tools and call_tool) or "code" (search_tools and execute_code)',
		)
		.option(
			"--always-list <glob>",
			"in search and code mode, tools still listed (e.g. github__*), repeatable",
			collect,
		);
}

/** `Name: value` headers into an object. */
function headersFrom(values: string[] | undefined): Record<string, string> | undefined {
	if (!values) return undefined;
	return Object.fromEntries(
		values.map((value) => {
			const colon = value.indexOf(":");
			if (colon <= 0) throw new CliError(`--header: '${value}' is not 'Name: value'.`);
			return [value.slice(0, colon).trim(), value.slice(colon + 1).trim()];
		}),
	);
}

/** `scheme=value` credentials into an object, by security scheme name. */
function credentialsFrom(values: string[] | undefined): Record<string, string> | undefined {
	if (!values) return undefined;
	return Object.fromEntries(
		values.map((value) => {
			const equals = value.indexOf("=");
			if (equals <= 0)
				throw new CliError(`--credential: '${value}' is not 'scheme=value' (a security scheme's name, then =).`);
			return [value.slice(0, equals), value.slice(equals + 1)];
		}),
	);
}

/**
 * The body's `openapi` from `--openapi <url|file>`: an http(s) URL is sent as
 * `url` (the gateway fetches it), anything else is a file read here and sent
 * as `document`, its text as written (JSON or YAML: the gateway reads both).
 */
function openApiFrom(options: { openapi?: string; baseUrl?: string; credential?: string[] }) {
	if (options.openapi === undefined) {
		if (options.baseUrl !== undefined || options.credential !== undefined)
			throw new CliError(
				"--base-url and --credential describe an OpenAPI server: give --openapi <url|file> with them.",
			);
		return undefined;
	}
	const source = options.openapi;
	const byUrl = URL.canParse(source) && /^https?:$/.test(new URL(source).protocol);
	let document: string | undefined;
	if (!byUrl) {
		try {
			document = readFileSync(source, "utf8");
		} catch (error) {
			throw new CliError(
				`--openapi: '${source}' is neither an http(s) URL nor a file that can be read (${(error as Error).message}).`,
				{
					cause: error,
				},
			);
		}
	}
	const given = {
		url: byUrl ? source : undefined,
		document,
		baseUrl: options.baseUrl,
		credentials: credentialsFrom(options.credential),
	};
	return Object.fromEntries(Object.entries(given).filter(([, value]) => value !== undefined));
}

/** What the list's URL column says of a server with no address of its own. */
function addressCell(server: Row): Row {
	if (server.connector) return { ...server, url: "(connectors)" };
	const openapi = server.openapi as { tools?: unknown } | undefined;
	if (openapi) return { ...server, url: `(openapi: ${String(openapi.tools)} tools)` };
	return server;
}

/** A server as the PUT answered it, then the notes on its document (operations left out, and why). */
function shownServer(server: Row): string {
	const { notes, ...rest } = server;
	const lines = Array.isArray(notes) ? notes.map((note) => `note: ${String(note)}`) : [];
	return [details(rest), ...lines].join("\n");
}

/** `'demoo' (did you mean 'demo'?)`: a name the listed ones lack, with the one most likely meant. */
function nameLike(name: string, listed: readonly string[]): string {
	return quotedName(name, closestName(name, listed));
}

function removed(command: Command, what: string): void {
	print(command, { removed: what }, () => `Removed ${what}.`);
}

function servers(program: Command): void {
	const group = program.command("servers").description("upstream MCP servers");
	group
		.command("list")
		.description("list servers")
		.action(async (_options, command: Command) => {
			const { servers } = await clientFor(command).request<{ servers: Row[] }>("GET", "/servers");
			// A server reached through connectors or made from a document has no URL: the column says how it is reached instead.
			const rows = servers.map(addressCell);
			print(command, servers, () =>
				table(rows, [
					["NAME", "name"],
					["URL", "url"],
					["PROTOCOL", "protocol"],
					["PINNING", "pinning"],
					["UPDATED", "updatedAt"],
				]),
			);
		});
	group
		.command("show <name>")
		.description("one server, with its check (does it answer, in which era)")
		.option("--no-check", "skip asking the server")
		.action(async (name: string, options: { check: boolean }, command: Command) => {
			const server = await clientFor(command).request<Row>(
				"GET",
				`/servers/${encodeURIComponent(name)}?check=${options.check}`,
			);
			print(command, server, () => details(server));
		});
	group
		.command("add <name>")
		.alias("put")
		.description("create or replace a server (PUT: fields not given take their defaults)")
		// Not --url, which names the gateway.
		.option("--upstream <url>", "the upstream's MCP endpoint (the body's url)")
		.option("--connector", 'reached through connectors (mcpgw connect) instead of a URL (the body\'s "connector": {})')
		.option(
			"--openapi <url|file>",
			"made from an OpenAPI document (3.x or Swagger 2.0, JSON or YAML): a URL the gateway fetches, or a file sent as the document",
		)
		.option("--base-url <url>", "with --openapi: where the API's paths go (absent: the document's first server)")
		.option(
			"--credential <scheme=value>",
			"with --openapi: a security scheme's credential, repeatable; secrets as ${UPSTREAM_NAME} references",
			collect,
		)
		.option("--header <header>", "'Name: value', repeatable; secrets as ${UPSTREAM_NAME} references", collect)
		.option("--timeout-seconds <seconds>", "how long an upstream request may take", integerOption("--timeout-seconds"))
		// The flag's name before it took the field's; kept so that scripts written with it still run.
		.addOption(new Option("--timeout <seconds>").argParser(integerOption("--timeout")).hideHelp())
		.option("--protocol <protocol>", '"auto" or a version that pins its era')
		.option("--pinning <mode>", '"block", "warn" or "off"')
		.option("--auth <type>", '"operator", "oauth", "identity" (others through --body)')
		.option("--body <json>", "the whole admin body; the options above override its fields")
		.option("--no-check", "register without asking the server")
		.action(async (name: string, options: Record<string, string & string[] & boolean>, command: Command) => {
			const body = bodyFrom(options, {
				url: options.upstream,
				connector: options.connector ? {} : undefined,
				openapi: openApiFrom(options),
				headers: headersFrom(options.header),
				timeoutSeconds: options.timeoutSeconds ?? options.timeout,
				protocol: options.protocol,
				pinning: options.pinning,
				auth: options.auth === undefined ? undefined : { type: options.auth },
			});
			const server = await clientFor(command).request<Row>(
				"PUT",
				`/servers/${encodeURIComponent(name)}?check=${options.check}`,
				body,
			);
			print(command, server, () => shownServer(server));
		});
	group
		.command("remove <name>")
		.description("delete a server")
		.action(async (name: string, _options, command: Command) => {
			await clientFor(command).request("DELETE", `/servers/${encodeURIComponent(name)}`);
			removed(command, `server ${name}`);
		});
}

function connectorTokens(program: Command): void {
	const group = program
		.command("connector-tokens")
		.description("what connectors (mcpgw connect) present for one server (a token is shown once, when made)");
	const path = (server: string) => `/servers/${encodeURIComponent(server)}/connector-tokens`;
	group
		.command("create <server>")
		.alias("add")
		.description("make a token for a server reached through connectors; printed this once")
		.action(async (server: string, _options, command: Command) => {
			const made = await clientFor(command).request<Row & { token: string }>("POST", path(server));
			print(
				command,
				made,
				() => `${details(made)}\n\nThe token is shown this once: give it to the connector now (MCPGW_CONNECTOR_TOKEN).`,
			);
		});
	group
		.command("list <server>")
		.description("a server's tokens: when made and last used, never the token")
		.action(async (server: string, _options, command: Command) => {
			const { connectorTokens: listed } = await clientFor(command).request<{ connectorTokens: Row[] }>(
				"GET",
				path(server),
			);
			print(command, listed, () =>
				table(listed, [
					["ID", "id"],
					["CREATED", "createdAt"],
					["LAST SEEN", "lastSeenAt"],
				]),
			);
		});
	group
		.command("revoke <server> <id>")
		.alias("remove")
		.description("revoke a token: its connectors are dropped and cannot come back with it")
		.action(async (server: string, id: string, _options, command: Command) => {
			await clientFor(command).request("DELETE", `${path(server)}/${encodeURIComponent(id)}`);
			removed(command, `connector token ${id} of ${server}`);
		});
}

function virtualServers(program: Command): void {
	const group = program.command("virtual-servers").description("one endpoint in front of several servers");
	group
		.command("list")
		.description("list virtual servers")
		.action(async (_options, command: Command) => {
			const { virtualServers } = await clientFor(command).request<{ virtualServers: Row[] }>("GET", "/virtual-servers");
			print(command, virtualServers, () =>
				table(virtualServers, [
					["NAME", "name"],
					["SERVERS", "servers"],
					["USER PATHS", "userPaths"],
					["UPDATED", "updatedAt"],
				]),
			);
		});
	group
		.command("show <name>")
		.description("one virtual server")
		.action(async (name: string, _options, command: Command) => {
			const virtualServer = await clientFor(command).request<Row>(
				"GET",
				`/virtual-servers/${encodeURIComponent(name)}`,
			);
			print(command, virtualServer, () => details(virtualServer));
		});
	disclosureOptions(group.command("add <name>").alias("put").description("create or replace a virtual server"))
		.option("--server <name>", "a member server, repeatable, in listing order", collect)
		.option("--user-path <path>", "a user path allowed to use it, repeatable (absent: all)", collect)
		.option("--body <json>", "the whole admin body; the options above override its fields")
		.action(
			async (
				name: string,
				options: { server?: string[]; userPath?: string[]; disclosure?: string; alwaysList?: string[]; body?: string },
				command: Command,
			) => {
				const body = bodyFrom(options, {
					servers: options.server,
					userPaths: options.userPath,
					disclosure: options.disclosure,
					alwaysList: options.alwaysList,
				});
				const virtualServer = await clientFor(command).request<Row>(
					"PUT",
					`/virtual-servers/${encodeURIComponent(name)}`,
					body,
				);
				print(command, virtualServer, () => details(virtualServer));
			},
		);
	group
		.command("remove <name>")
		.description("delete a virtual server")
		.action(async (name: string, _options, command: Command) => {
			await clientFor(command).request("DELETE", `/virtual-servers/${encodeURIComponent(name)}`);
			removed(command, `virtual server ${name}`);
		});
}

function keys(program: Command): void {
	const group = program.command("keys").description("API keys (their secrets are shown once, when made)");
	const listKeys = async (command: Command) =>
		(await clientFor(command).request<{ keys: ListedKey[] }>("GET", "/keys")).keys;
	group
		.command("list")
		.description("list keys, without secrets")
		.action(async (_options, command: Command) => {
			const listed = await listKeys(command);
			print(command, listed, () =>
				table(listed as unknown as Row[], [
					["ID", "id"],
					["NAME", "name"],
					["USER PATH", "userPath"],
					["SERVERS", "servers"],
					["RATE CLASS", "rateClass"],
					["CREATED", "createdAt"],
				]),
			);
		});
	group
		.command("show <id>")
		.description("one key, by id")
		.action(async (id: string, _options, command: Command) => {
			const listed = await listKeys(command);
			const key = listed.find((entry) => entry.id === id);
			if (!key)
				throw new CliError(
					`Not Found: no API key with id ${nameLike(
						id,
						listed.map((entry) => entry.id),
					)}.`,
				);
			print(command, key, () => details(key as unknown as Row));
		});
	disclosureOptions(group.command("add").description("make a key; its secret is printed this once"))
		.option("--name <name>", "what it is for")
		.option("--server <name>", "a server or virtual server it may use, repeatable (absent: all)", collect)
		.option("--user-path <path>", "its user path (default /)")
		.option("--max-sessions <n>", "live sessions at once", integerOption("--max-sessions"))
		.option("--rate-class <class>", "which rate limit counts it")
		.option("--body <json>", "the whole admin body; the options above override its fields")
		.action(async (options: Record<string, string & string[] & number>, command: Command) => {
			const body = bodyFrom(options, {
				name: options.name,
				servers: options.server,
				userPath: options.userPath,
				maxSessions: options.maxSessions,
				rateClass: options.rateClass,
				disclosure: options.disclosure,
				alwaysList: options.alwaysList,
			});
			const created = await clientFor(command).request<Row & { key: string; id: string }>("POST", "/keys", body);
			print(command, created, () => `${details(created)}\n\nThe key is shown this once: store it now.`);
		});
	group
		.command("remove <id>")
		.alias("revoke")
		.description("revoke a key")
		.action(async (id: string, _options, command: Command) => {
			await clientFor(command).request("DELETE", `/keys/${encodeURIComponent(id)}`);
			removed(command, `key ${id}`);
		});
}

function rules(program: Command): void {
	const group = program.command("rules").description("access rules: what signed-in people may use");
	const listRules = async (command: Command) =>
		(await clientFor(command).request<{ accessRules: Row[] }>("GET", "/access-rules")).accessRules;
	group
		.command("list")
		.description("list access rules, in the order they are tried")
		.action(async (_options, command: Command) => {
			const listed = await listRules(command);
			print(command, listed, () =>
				table(listed, [
					["NAME", "name"],
					["PRIORITY", "priority"],
					["MATCH", "match"],
					["SERVERS", "servers"],
					["USER PATH", "userPath"],
				]),
			);
		});
	group
		.command("show <name>")
		.description("one access rule")
		.action(async (name: string, _options, command: Command) => {
			const listed = await listRules(command);
			const rule = listed.find((entry) => entry.name === name);
			if (!rule)
				throw new CliError(
					`Not Found: no access rule named ${nameLike(
						name,
						listed.map((entry) => String(entry.name)),
					)}.`,
				);
			print(command, rule, () => details(rule));
		});
	disclosureOptions(group.command("add <name>").alias("put").description("create or replace an access rule"))
		.option("--email <address>", "match a verified email address")
		.option("--email-domain <domain>", "match a verified address's domain")
		.option("--subject <sub>", "match the sub claim")
		.option("--group <group>", "match a member of the groups claim")
		.option("--issuer <url>", "the issuer (default: the one the gateway trusts)")
		.option("--server <name>", "a server it grants, repeatable (absent: all)", collect)
		.option("--user-path <path>", "the user path it grants")
		.option("--max-sessions <n>", "live sessions one identity may hold at once", integerOption("--max-sessions"))
		.option("--rate-class <class>", "which rate limit counts each identity")
		.option("--admin", "may also run the gateway from the dashboard at /admin/")
		.option("--approver", "may decide calls an approve policy holds, at /approvals (never their own)")
		.option("--priority <n>", "lower first (default 100)", integerOption("--priority"))
		.option("--body <json>", "the whole admin body; the options above override its fields")
		.action(async (name: string, options: Record<string, string & string[] & number & boolean>, command: Command) => {
			const match = Object.fromEntries(
				Object.entries({
					email: options.email,
					emailDomain: options.emailDomain,
					subject: options.subject,
					group: options.group,
					issuer: options.issuer,
				}).filter(([, value]) => value !== undefined),
			);
			const body = bodyFrom(options, {
				match: Object.keys(match).length > 0 ? match : undefined,
				servers: options.server,
				userPath: options.userPath,
				maxSessions: options.maxSessions,
				rateClass: options.rateClass,
				admin: options.admin,
				approver: options.approver,
				priority: options.priority,
				disclosure: options.disclosure,
				alwaysList: options.alwaysList,
			});
			const rule = await clientFor(command).request<Row>("PUT", `/access-rules/${encodeURIComponent(name)}`, body);
			print(command, rule, () => details(rule));
		});
	group
		.command("remove <name>")
		.description("delete an access rule (what people connected under it is disconnected)")
		.action(async (name: string, _options, command: Command) => {
			await clientFor(command).request("DELETE", `/access-rules/${encodeURIComponent(name)}`);
			removed(command, `access rule ${name}`);
		});
}

function policies(program: Command): void {
	const group = program.command("policies").description("tool policies (CEL)");
	group
		.command("list")
		.description("list policies, in the order they are evaluated")
		.action(async (_options, command: Command) => {
			const { policies: listed } = await clientFor(command).request<{ policies: Row[] }>("GET", "/policies");
			print(command, listed, () =>
				table(listed, [
					["NAME", "name"],
					["PRIORITY", "priority"],
					["EFFECT", "effect"],
					["EXPRESSION", "expression"],
					["APPLIES", "applies"],
				]),
			);
		});
	group
		.command("show <name>")
		.description("one policy")
		.action(async (name: string, _options, command: Command) => {
			const policy = await clientFor(command).request<Row>("GET", `/policies/${encodeURIComponent(name)}`);
			print(command, policy, () => details(policy));
		});
	group
		.command("add <name>")
		.alias("put")
		.description("create or replace a policy")
		.option("--expression <cel>", "the CEL expression")
		.option("--effect <effect>", '"allow", "deny", "confirm" or "approve"')
		.option("--priority <n>", "lower first (default 100)", integerOption("--priority"))
		.option(
			"--approval-timeout-seconds <seconds>",
			"for approve: how long a call waits for an approver (default 600)",
			integerOption("--approval-timeout-seconds"),
		)
		.option("--approval-webhook-url <url>", "for approve: where a notice of each held call is POSTed")
		.option("--approval-webhook-secret <reference>", "for approve: the ${UPSTREAM_NAME} secret that signs the notices")
		.option("--applies <json>", "where it applies: { servers?, virtualServers?, keys?, rules? }")
		.option("--body <json>", "the whole admin body; the options above override its fields")
		.action(async (name: string, options: Record<string, string & number>, command: Command) => {
			const body = bodyFrom(options, {
				expression: options.expression,
				effect: options.effect,
				priority: options.priority,
				approvalTimeoutSeconds: options.approvalTimeoutSeconds,
				approvalWebhook:
					options.approvalWebhookUrl === undefined && options.approvalWebhookSecret === undefined
						? undefined
						: { url: options.approvalWebhookUrl, secret: options.approvalWebhookSecret },
				applies: options.applies === undefined ? undefined : parseJsonOption("--applies", options.applies),
			});
			const policy = await clientFor(command).request<Row>("PUT", `/policies/${encodeURIComponent(name)}`, body);
			print(command, policy, () => details(policy));
		});
	group
		.command("remove <name>")
		.description("delete a policy")
		.action(async (name: string, _options, command: Command) => {
			await clientFor(command).request("DELETE", `/policies/${encodeURIComponent(name)}`);
			removed(command, `policy ${name}`);
		});
}

/** What the list's SCANS WITH column says of a guard: its detectors, or its webhook's URL (never its secret). */
function scanCell(guard: Row): Row {
	const webhook = guard.webhook as { url?: unknown } | null | undefined;
	return { ...guard, scan: webhook?.url === undefined ? guard.detect : `webhook ${String(webhook.url)}` };
}

function guards(program: Command): void {
	const group = program
		.command("guards")
		.description("content guards: what is scanned, where, and what is done with a find");
	group
		.command("list")
		.description("list guards, in the order they run (by name)")
		.action(async (_options, command: Command) => {
			const { guards: listed } = await clientFor(command).request<{ guards: Row[] }>("GET", "/guards");
			print(command, listed, () =>
				table(listed.map(scanCell), [
					["NAME", "name"],
					["STAGE", "stage"],
					["SCANS WITH", "scan"],
					["ACTION", "action"],
					["APPLIES", "applies"],
				]),
			);
		});
	group
		.command("show <name>")
		.description("one guard")
		.action(async (name: string, _options, command: Command) => {
			const guard = await clientFor(command).request<Row>("GET", `/guards/${encodeURIComponent(name)}`);
			print(command, guard, () => details(guard));
		});
	group
		.command("add <name>")
		.alias("put")
		.description("create or replace a guard (a webhook guard through --body)")
		.option("--stage <stage>", '"request" (a call\'s arguments) or "response" (its result, and resource reads)')
		.option("--detect <kind>", "a built-in detector (secrets, email, phone, card, iban), repeatable", collect)
		.option("--action <action>", '"redact", "block" or "log"')
		.option("--applies <json>", "where it applies: { servers?, virtualServers?, keys?, rules?, tools? }")
		.option("--body <json>", "the whole admin body; the options above override its fields")
		.action(async (name: string, options: Record<string, string & string[]>, command: Command) => {
			const body = bodyFrom(options, {
				stage: options.stage,
				detect: options.detect,
				action: options.action,
				applies: options.applies === undefined ? undefined : parseJsonOption("--applies", options.applies),
			});
			const guard = await clientFor(command).request<Row>("PUT", `/guards/${encodeURIComponent(name)}`, body);
			print(command, guard, () => details(guard));
		});
	group
		.command("remove <name>")
		.description("delete a guard")
		.action(async (name: string, _options, command: Command) => {
			await clientFor(command).request("DELETE", `/guards/${encodeURIComponent(name)}`);
			removed(command, `guard ${name}`);
		});
}

function connections(program: Command): void {
	const group = program.command("connections").description("accounts people (or keys) connected at oauth servers");
	group
		.command("list")
		.description("who connected to a server, and since when (never a token)")
		.requiredOption("--server <name>", "the oauth server")
		.action(async (options: { server: string }, command: Command) => {
			const { connections: listed } = await clientFor(command).request<{ connections: Row[] }>(
				"GET",
				`/connections?server=${encodeURIComponent(options.server)}`,
			);
			print(command, listed, () =>
				table(listed, [
					["WHO", "who"],
					["SUBJECT", "subject"],
					["KEY", "keyId"],
					["RULE", "rule"],
					["CONNECTED", "connectedAt"],
				]),
			);
		});
	group
		.command("remove")
		.description("disconnect a person or a key from a server (tokens deleted and revoked upstream)")
		.requiredOption("--server <name>", "the oauth server")
		.option("--subject <sub>", "the person's sub claim")
		.option("--issuer <url>", "the person's issuer, when not the gateway's")
		.option("--key <id>", "an API key's id, instead of a person")
		.action(async (options: Record<string, string | undefined>, command: Command) => {
			const query = new URLSearchParams(
				Object.entries(options).filter((entry): entry is [string, string] => entry[1] !== undefined),
			);
			const answer = await clientFor(command).request<{ disconnected: number }>("DELETE", `/connections?${query}`);
			print(command, answer, () => `Disconnected ${answer.disconnected}.`);
		});
}

function tools(program: Command): void {
	const group = program.command("tools").description("a server's tools and their pinning states");
	group
		.command("list <server>")
		.description("each tool: approved, changed (with the fields), new, removed")
		.action(async (server: string, _options, command: Command) => {
			const view = await clientFor(command).request<Row & { tools: Row[]; unlisted?: string }>(
				"GET",
				`/servers/${encodeURIComponent(server)}/tools`,
			);
			print(command, view, () => {
				const head = `${view.server} (pinning ${view.pinning}${view.recorded ? "" : ", nothing recorded yet"})`;
				const unlisted = view.unlisted ? `\n${view.unlisted}` : "";
				return `${head}${unlisted}\n${table(view.tools, [
					["TOOL", "name"],
					["STATE", "state"],
					["CHANGED", "changedFields"],
					["APPROVED", "approvedAt"],
				])}`;
			});
		});
	group
		.command("approve <server> [tools...]")
		.description("approve every tool the server lists now, or the named ones")
		.action(async (server: string, names: string[], _options, command: Command) => {
			const answer = await clientFor(command).request<{ approved: string[]; forgotten: string[] }>(
				"POST",
				`/servers/${encodeURIComponent(server)}/tools/approve`,
				names.length > 0 ? { tools: names } : {},
			);
			print(
				command,
				answer,
				() => `Approved: ${answer.approved.join(", ") || "-"}; forgotten: ${answer.forgotten.join(", ") || "-"}.`,
			);
		});
}

function approvals(program: Command): void {
	const group = program.command("approvals").description("calls an approve policy holds for an approver");
	group
		.command("list")
		.description("the calls waiting for an approver, oldest first")
		.action(async (_options, command: Command) => {
			const { approvals: waiting } = await clientFor(command).request<{ approvals: Row[] }>("GET", "/approvals");
			print(command, waiting, () =>
				table(waiting, [
					["ID", "id"],
					["WHO", "principal"],
					["SERVER", "server"],
					["TOOL", "tool"],
					["ARGUMENTS", "arguments"],
					["POLICY", "policy"],
				]),
			);
		});
	for (const decision of ["approve", "deny"] as const) {
		group
			.command(`${decision} <id>`)
			.description(decision === "approve" ? "send the waiting call, once" : "fail the waiting call; nothing is sent")
			.option("--reason <text>", "why (a denied call's error carries it)")
			.action(async (id: string, options: { reason?: string }, command: Command) => {
				const answer = await clientFor(command).request<{ id: string; status: string }>(
					"POST",
					`/approvals/${encodeURIComponent(id)}`,
					options.reason === undefined ? { decision } : { decision, reason: options.reason },
				);
				print(command, answer, () => `Approval ${answer.id}: ${answer.status}.`);
			});
	}
}

export function addResourceCommands(program: Command): void {
	servers(program);
	connectorTokens(program);
	virtualServers(program);
	keys(program);
	rules(program);
	policies(program);
	guards(program);
	approvals(program);
	connections(program);
	tools(program);
}
