import type { Child } from "hono/jsx";
import type { CallerAuth } from "../server-check.ts";
import type { CallFigures } from "./call-figures.ts";
import { DASHBOARD_UI } from "./layout.tsx";
import {
	type Check,
	type Failed,
	type GuardView,
	needingApproval,
	type Overview,
	type ServerRow,
} from "./overview-data.ts";

/** The overview at /admin/: every section on one page, each a table whose rows stack on a phone. */

const SECTIONS = [
	["servers", "Servers"],
	["calls", "Calls"],
	["virtual-servers", "Virtual servers"],
	["keys", "Keys"],
	["access-rules", "Access rules"],
	["policies", "Policies"],
	["guards", "Guards"],
	["approvals", "Approvals"],
	["connections", "Connected accounts"],
] as const;

export function OverviewPage(props: { overview: Overview; figures: CallFigures; peopleSignIn: boolean }) {
	const { overview } = props;
	return (
		<>
			<h1>Gateway dashboard</h1>
			<nav aria-label="Sections">
				{SECTIONS.map(([id, label]) => (
					<a href={`#${id}`}>{label}</a>
				))}
			</nav>
			<Servers servers={overview.servers} />
			<Calls figures={props.figures} />
			<VirtualServers rows={overview.virtualServers} />
			<Keys rows={overview.keys} />
			<AccessRules rows={overview.accessRules} peopleSignIn={props.peopleSignIn} />
			<Policies rows={overview.policies} />
			<Guards rows={overview.guards} />
			<Approvals rows={overview.approvals} />
			<Connections rows={overview.connections} />
		</>
	);
}

/**
 * A table of `rows` under `head`; `empty` when there are none. On a phone its
 * rows stack, each cell labelled with its column's name (`data-label`, style.ts);
 * wider than the page, it scrolls inside its box.
 */
export function DataTable(props: { head: readonly string[]; rows: readonly Child[][]; empty: string }) {
	if (props.rows.length === 0) return <p>{props.empty}</p>;
	return (
		<div class="scroll rows">
			<table>
				<thead>
					<tr>
						{props.head.map((label) => (
							<th>{label}</th>
						))}
					</tr>
				</thead>
				<tbody>
					{props.rows.map((cells) => (
						<tr>
							{cells.map((cell, column) => (
								// The first column names the row (a server, a key, a rule): kept whole.
								<td data-label={props.head[column] ?? ""} class={column === 0 ? "nowrap" : undefined}>
									{cell}
								</td>
							))}
						</tr>
					))}
				</tbody>
			</table>
		</div>
	);
}

/** A server that refused the check because it takes each caller's own credential: no fault, so no alarm colour. */
const NEEDS_CALLER_WORDS: Record<CallerAuth, string> = {
	oauth: "Answers; each caller signs in",
	identity: "Answers; needs the caller's identity",
	"token-exchange": "Answers; needs the caller's own token",
};

export function CheckState(props: { check: Check | Failed }) {
	const { check } = props;
	if ("failed" in check) return <span class="bad">Not checked: {check.failed}</span>;
	if (check.speaksMcp) return <span class="ok">Answers</span>;
	if (check.needsCaller) return <span class="muted">{NEEDS_CALLER_WORDS[check.needsCaller]}</span>;
	return <span class="bad">{check.reachable ? "Answers, but not as MCP" : "Does not answer"}</span>;
}

function ToolSummary(props: { row: ServerRow }) {
	const { tools } = props.row;
	if ("failed" in tools) return <span class="muted">Unknown: {tools.failed}</span>;
	const waiting = needingApproval(tools);
	const listed = tools.tools.filter((tool) => tool.state !== "removed" && tool.state !== "pinned").length;
	return (
		<>
			{tools.unlisted === undefined ? `${listed}` : <span class="muted">not listed</span>}
			{waiting.length > 0 ? (
				<>
					{" "}
					<strong class="off">({waiting.length} to approve)</strong>
				</>
			) : null}
		</>
	);
}

/** Names, comma-separated, each kept whole on its line (a name breaks at no hyphen). */
function Names(props: { names: readonly string[] }) {
	return (
		<>
			{props.names.map((name, at) => (
				<>
					{at > 0 ? ", " : null}
					<span class="nowrap">{name}</span>
				</>
			))}
		</>
	);
}

/** Names a list, or "all" for a grant of everything (null). */
const allOr = (names: readonly string[] | null | undefined) => (names ? <Names names={names} /> : "all");

/** Under a server's name, how a server without an address of its own is reached. */
function ReachedBy(props: { row: ServerRow }) {
	const { row } = props;
	const how = row.openapi ? "from an OpenAPI document" : row.url === null ? "via connectors" : null;
	if (how === null) return null;
	return (
		<>
			<br />
			<span class="muted">{how}</span>
		</>
	);
}

function Servers(props: { servers: ServerRow[] }) {
	return (
		<section id="servers">
			<h2>Servers</h2>
			<DataTable
				head={["Server", "Check", "Era", "Tools", "Auth"]}
				empty="No servers yet."
				rows={props.servers.map((row) => [
					<>
						<a href={`${DASHBOARD_UI}/servers/${encodeURIComponent(row.name)}`}>{row.name}</a>
						<ReachedBy row={row} />
					</>,
					<CheckState check={row.check} />,
					// An era is one word: never split at its hyphens.
					<span class="nowrap">{"failed" in row.check ? "" : (row.check.era ?? "")}</span>,
					<ToolSummary row={row} />,
					row.auth,
				])}
			/>
			<form method="post" action={`${DASHBOARD_UI}/servers`}>
				<fieldset>
					<legend>Add a server</legend>
					<label>
						Name <input type="text" name="name" required pattern="[a-z0-9][a-z0-9\-]{0,31}" />
					</label>
					<label>
						URL <input type="url" name="url" required placeholder="https://mcp.example.com/mcp" />
					</label>
					<label>
						Changed tools{" "}
						<select name="pinning">
							<option value="warn">are served, and shown here to approve (warn)</option>
							<option value="block">are held until approved (block)</option>
							<option value="off">are not tracked (off)</option>
						</select>
					</label>
					<button type="submit">Add server</button>
				</fieldset>
			</form>
		</section>
	);
}

function Calls(props: { figures: CallFigures }) {
	const { figures } = props;
	const rows = "rows" in figures ? figures.rows : [];
	const most = Math.max(1, ...rows.map((row) => row.calls));
	return (
		<section id="calls">
			<h2>Calls in the last hour</h2>
			{"unavailable" in figures ? (
				<p class="muted">{figures.unavailable}</p>
			) : (
				<DataTable
					head={["Server", "Calls", "Errors", "Share"]}
					empty="No tool calls in the last hour."
					rows={rows.map((row) => [
						row.server,
						`${row.calls}`,
						<span class={row.errors > 0 ? "bad" : ""}>{row.errors}</span>,
						// Bars for the eye only: the numbers are in the cells before them.
						<span aria-hidden="true">
							<span class="bar" style={`width:${(100 * row.calls) / most}%`}></span>
							<span class="bar errors" style={`width:${(100 * row.errors) / most}%`}></span>
						</span>,
					])}
				/>
			)}
			<p class="muted">{figures.source}</p>
		</section>
	);
}

function VirtualServers(props: { rows: Overview["virtualServers"] }) {
	return (
		<section id="virtual-servers">
			<h2>Virtual servers</h2>
			<DataTable
				head={["Name", "Members", "User paths"]}
				empty="No virtual servers."
				rows={props.rows.map((row) => [row.name, <Names names={row.servers} />, allOr(row.userPaths)])}
			/>
		</section>
	);
}

function Keys(props: { rows: Overview["keys"] }) {
	return (
		<section id="keys">
			<h2>Keys</h2>
			<DataTable
				head={["Name", "Id", "Servers", "Created", ""]}
				empty="No API keys."
				rows={props.rows.map((key) => [
					key.name ?? "",
					key.id,
					allOr(key.servers),
					<time datetime={key.createdAt}>{key.createdAt.slice(0, 10)}</time>,
					<form method="post" action={`${DASHBOARD_UI}/keys/${encodeURIComponent(key.id)}/revoke`}>
						<button type="submit" aria-label={`Revoke ${key.name ?? key.id}`}>
							Revoke
						</button>
					</form>,
				])}
			/>
			<form method="post" action={`${DASHBOARD_UI}/keys`}>
				<fieldset>
					<legend>Create a key</legend>
					<label>
						Name <input type="text" name="name" required maxlength={100} />
					</label>
					<label>
						Servers (comma-separated; empty: all) <input type="text" name="servers" />
					</label>
					<button type="submit">Create key</button>
				</fieldset>
			</form>
		</section>
	);
}

function AccessRules(props: { rows: Overview["accessRules"]; peopleSignIn: boolean }) {
	return (
		<section id="access-rules">
			<h2>Access rules</h2>
			{props.peopleSignIn ? null : (
				<p class="muted">This gateway does not sign people in (OIDC_ISSUER is not set): rules admit nobody yet.</p>
			)}
			<DataTable
				head={["Name", "Matches", "Servers", "Priority", "Admin"]}
				empty="No access rules."
				rows={props.rows.map((rule) => [
					rule.name,
					Object.entries(rule.match)
						.map(([field, value]) => `${field}: ${value}`)
						.join(", "),
					allOr(rule.servers),
					`${rule.priority}`,
					rule.admin ? "yes" : "no",
				])}
			/>
		</section>
	);
}

function Policies(props: { rows: Overview["policies"] }) {
	return (
		<section id="policies">
			<h2>Policies</h2>
			<DataTable
				head={["Name", "Effect", "Expression", "Priority"]}
				empty="No policies."
				rows={props.rows.map((policy) => [
					policy.name,
					policy.effect,
					<code>{policy.expression}</code>,
					`${policy.priority}`,
				])}
			/>
		</section>
	);
}

/** Where a guard applies, list by list (every list given must match), or everywhere. */
function GuardApplies(props: { applies: GuardView["applies"] }) {
	const lists = Object.entries(props.applies ?? {}).filter(
		(entry): entry is [string, string[]] => Array.isArray(entry[1]) && entry[1].length > 0,
	);
	if (lists.length === 0) return <>everywhere</>;
	return (
		<>
			{lists.map(([field, names], at) => (
				<>
					{at > 0 ? <br /> : null}
					{field}: <Names names={names} />
				</>
			))}
		</>
	);
}

/** Content guards: what each scans, where, with what (its detectors, or its webhook's URL alone) and what it does. */
function Guards(props: { rows: Overview["guards"] }) {
	return (
		<section id="guards">
			<h2>Guards</h2>
			<DataTable
				head={["Name", "Stage", "Applies to", "Scans with", "Action"]}
				empty="No content guards."
				rows={props.rows.map((guard) => [
					guard.name,
					guard.stage,
					<GuardApplies applies={guard.applies} />,
					guard.webhook ? (
						<>
							webhook <code>{guard.webhook.url}</code>
						</>
					) : (
						<Names names={guard.detect ?? []} />
					),
					guard.action,
				])}
			/>
			<p class="muted">Guards run in name order; change them with mcpgw, a gateway.config.json or the admin API.</p>
		</section>
	);
}

/** The calls waiting for an approver, each with its Approve and Deny (decision 0117). */
function Approvals(props: { rows: Overview["approvals"] }) {
	return (
		<section id="approvals">
			<h2>Approvals</h2>
			<DataTable
				head={["Who", "Server", "Tool", "Arguments", "Policy", "Until", "Decide"]}
				empty="No call waits for an approver."
				rows={props.rows.map((row) => {
					const action = `${DASHBOARD_UI}/approvals/${encodeURIComponent(row.id)}`;
					return [
						row.principal,
						row.server,
						row.tool,
						<code>{row.arguments}</code>,
						row.policy,
						new Date(row.until).toISOString(),
						<>
							<form method="post" action={`${action}/approve`}>
								<button type="submit">Approve</button>
							</form>
							<form method="post" action={`${action}/deny`}>
								<input name="reason" aria-label="Reason" placeholder="Reason (optional)" maxlength={500} />
								<button type="submit">Deny</button>
							</form>
						</>,
					];
				})}
			/>
		</section>
	);
}

function Connections(props: { rows: Overview["connections"] }) {
	return (
		<section id="connections">
			<h2>Connected accounts</h2>
			<DataTable
				head={["Server", "Who", "Since"]}
				empty="Nobody has connected an account of their own at an oauth server."
				rows={props.rows.map((row) => [
					row.server,
					row.who,
					<time datetime={row.connectedAt}>{row.connectedAt.slice(0, 10)}</time>,
				])}
			/>
		</section>
	);
}
