import type { CallFigures } from "./call-figures.ts";
import { DASHBOARD_UI } from "./layout.tsx";
import { type Check, needingApproval, type Overview, type ServerRow } from "./overview-data.ts";

/** The overview at /admin/: every section on one page, each a table that scrolls in its box on a phone. */

const SECTIONS = [
	["servers", "Servers"],
	["calls", "Calls"],
	["virtual-servers", "Virtual servers"],
	["keys", "Keys"],
	["access-rules", "Access rules"],
	["policies", "Policies"],
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
			<Connections rows={overview.connections} />
		</>
	);
}

export function CheckState(props: { check: Check | { failed: string } }) {
	const { check } = props;
	if ("failed" in check) return <span class="bad">Not checked: {check.failed}</span>;
	if (check.speaksMcp) return <span class="ok">Answers</span>;
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

function Servers(props: { servers: ServerRow[] }) {
	return (
		<section id="servers">
			<h2>Servers</h2>
			{props.servers.length === 0 ? (
				<p>No servers yet.</p>
			) : (
				<div class="scroll">
					<table>
						<thead>
							<tr>
								<th>Server</th>
								<th>Check</th>
								<th>Era</th>
								<th>Tools</th>
								<th>Auth</th>
							</tr>
						</thead>
						<tbody>
							{props.servers.map((row) => (
								<tr>
									<td>
										<a href={`${DASHBOARD_UI}/servers/${encodeURIComponent(row.name)}`}>{row.name}</a>
									</td>
									<td>
										<CheckState check={row.check} />
									</td>
									<td>{"failed" in row.check ? "" : (row.check.era ?? "")}</td>
									<td>
										<ToolSummary row={row} />
									</td>
									<td>{row.auth}</td>
								</tr>
							))}
						</tbody>
					</table>
				</div>
			)}
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
	const most = "rows" in figures ? Math.max(1, ...figures.rows.map((row) => row.calls)) : 1;
	return (
		<section id="calls">
			<h2>Calls in the last hour</h2>
			{"unavailable" in figures ? (
				<p class="muted">{figures.unavailable}</p>
			) : figures.rows.length === 0 ? (
				<p>No tool calls in the last hour.</p>
			) : (
				<div class="scroll">
					<table>
						<thead>
							<tr>
								<th>Server</th>
								<th>Calls</th>
								<th>Errors</th>
								<th>Share</th>
							</tr>
						</thead>
						<tbody>
							{figures.rows.map((row) => (
								<tr>
									<td>{row.server}</td>
									<td>{row.calls}</td>
									<td class={row.errors > 0 ? "bad" : ""}>{row.errors}</td>
									<td aria-hidden="true" style="width:40%">
										<span class="bar" style={`width:${(100 * row.calls) / most}%`}></span>
										<span class="bar errors" style={`width:${(100 * row.errors) / most}%`}></span>
									</td>
								</tr>
							))}
						</tbody>
					</table>
				</div>
			)}
			<p class="muted">{figures.source}</p>
		</section>
	);
}

function VirtualServers(props: { rows: Overview["virtualServers"] }) {
	return (
		<section id="virtual-servers">
			<h2>Virtual servers</h2>
			{props.rows.length === 0 ? (
				<p>No virtual servers.</p>
			) : (
				<div class="scroll">
					<table>
						<thead>
							<tr>
								<th>Name</th>
								<th>Members</th>
								<th>User paths</th>
							</tr>
						</thead>
						<tbody>
							{props.rows.map((row) => (
								<tr>
									<td>{row.name}</td>
									<td>{row.servers.join(", ")}</td>
									<td>{row.userPaths?.join(", ") ?? "all"}</td>
								</tr>
							))}
						</tbody>
					</table>
				</div>
			)}
		</section>
	);
}

function Keys(props: { rows: Overview["keys"] }) {
	return (
		<section id="keys">
			<h2>Keys</h2>
			{props.rows.length === 0 ? (
				<p>No API keys.</p>
			) : (
				<div class="scroll">
					<table>
						<thead>
							<tr>
								<th>Name</th>
								<th>Id</th>
								<th>Servers</th>
								<th>Created</th>
								<th></th>
							</tr>
						</thead>
						<tbody>
							{props.rows.map((key) => (
								<tr>
									<td>{key.name ?? ""}</td>
									<td>{key.id}</td>
									<td>{key.servers?.join(", ") ?? "all"}</td>
									<td>{key.createdAt.slice(0, 10)}</td>
									<td>
										<form method="post" action={`${DASHBOARD_UI}/keys/${encodeURIComponent(key.id)}/revoke`}>
											<button type="submit" aria-label={`Revoke ${key.name ?? key.id}`}>
												Revoke
											</button>
										</form>
									</td>
								</tr>
							))}
						</tbody>
					</table>
				</div>
			)}
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
			{props.rows.length === 0 ? (
				<p>No access rules.</p>
			) : (
				<div class="scroll">
					<table>
						<thead>
							<tr>
								<th>Name</th>
								<th>Matches</th>
								<th>Servers</th>
								<th>Priority</th>
								<th>Admin</th>
							</tr>
						</thead>
						<tbody>
							{props.rows.map((rule) => (
								<tr>
									<td>{rule.name}</td>
									<td>
										{Object.entries(rule.match)
											.map(([field, value]) => `${field}: ${value}`)
											.join(", ")}
									</td>
									<td>{rule.servers?.join(", ") ?? "all"}</td>
									<td>{rule.priority}</td>
									<td>{rule.admin ? "yes" : "no"}</td>
								</tr>
							))}
						</tbody>
					</table>
				</div>
			)}
		</section>
	);
}

function Policies(props: { rows: Overview["policies"] }) {
	return (
		<section id="policies">
			<h2>Policies</h2>
			{props.rows.length === 0 ? (
				<p>No policies.</p>
			) : (
				<div class="scroll">
					<table>
						<thead>
							<tr>
								<th>Name</th>
								<th>Effect</th>
								<th>Expression</th>
								<th>Priority</th>
							</tr>
						</thead>
						<tbody>
							{props.rows.map((policy) => (
								<tr>
									<td>{policy.name}</td>
									<td>{policy.effect}</td>
									<td>
										<code>{policy.expression}</code>
									</td>
									<td>{policy.priority}</td>
								</tr>
							))}
						</tbody>
					</table>
				</div>
			)}
		</section>
	);
}

function Connections(props: { rows: Overview["connections"] }) {
	return (
		<section id="connections">
			<h2>Connected accounts</h2>
			{props.rows.length === 0 ? (
				<p>Nobody has connected an account of their own at an oauth server.</p>
			) : (
				<div class="scroll">
					<table>
						<thead>
							<tr>
								<th>Server</th>
								<th>Who</th>
								<th>Since</th>
							</tr>
						</thead>
						<tbody>
							{props.rows.map((row) => (
								<tr>
									<td>{row.server}</td>
									<td>{row.who}</td>
									<td>{row.connectedAt.slice(0, 10)}</td>
								</tr>
							))}
						</tbody>
					</table>
				</div>
			)}
		</section>
	);
}
