import { DASHBOARD_HOME, DASHBOARD_UI } from "./layout.tsx";
import type { NewKey } from "./new-key.ts";
import { CheckState, DataTable } from "./overview.tsx";
import type { ConnectorsView, OpenApiView, ServerDetail, ToolsView } from "./overview-data.ts";
import { needingApproval } from "./overview-data.ts";

/** The dashboard's pages other than the overview: sign-in, one server's tools, a new key. */

/**
 * Signing in: the admin token's form, and the organisation's sign-in when the
 * gateway signs people in; both come back to `returnTo`, a page of the
 * gateway the routes already checked (the overview unless another was asked for).
 */
export function SignInPage(props: { peopleSignIn: boolean; returnTo: string; problem?: string }) {
	const back = props.returnTo === DASHBOARD_HOME ? "" : `?return=${encodeURIComponent(props.returnTo)}`;
	return (
		<>
			<h1>Sign in to the gateway dashboard</h1>
			{props.problem ? <p class="warn">{props.problem}</p> : null}
			{props.peopleSignIn ? (
				<p>
					<a href={`${DASHBOARD_UI}/sign-in/person${back}`}>Sign in with your organisation</a> (your access rule must
					grant admin).
				</p>
			) : null}
			<form method="post" action={`${DASHBOARD_UI}/sign-in`}>
				<input type="hidden" name="return" value={props.returnTo} />
				<label>
					Admin token <input type="password" name="token" required autocomplete="current-password" />
				</label>
				<p>
					<button type="submit">Sign in with the admin token</button>
				</p>
			</form>
			<p class="muted">The token is checked once; the browser keeps only a signed session, never the token.</p>
		</>
	);
}

const STATE_WORDS: Record<ToolsView["tools"][number]["state"], string> = {
	approved: "Approved",
	changed: "Changed since approved",
	new: "New",
	removed: "No longer listed",
	pinned: "Approved (not listed now)",
};

/** One server: its check, and its tools against their pins, with approval for those that wait. */
export function ServerPage(props: { name: string } & ServerDetail) {
	const { name, tools } = props;
	const action = `${DASHBOARD_UI}/servers/${encodeURIComponent(name)}`;
	const waiting = "failed" in tools ? [] : needingApproval(tools);
	return (
		<>
			<h1>Server {name}</h1>
			<p>
				Check: <CheckState check={props.check} />
				{"failed" in props.check || props.check.era === null ? null : <> (era {props.check.era})</>}
				{"failed" in props.check ? null : <span class="muted"> {props.check.detail}</span>}
			</p>
			{props.connectors ? <Connectors action={action} view={props.connectors} /> : null}
			{props.openapi ? <OpenApiDocument view={props.openapi} /> : null}
			<h2>Tools</h2>
			{"failed" in tools ? (
				<p class="bad">{tools.failed}</p>
			) : (
				<>
					<p>
						Pinning: {tools.pinning}.{" "}
						{tools.unlisted === undefined ? null : <span class="muted">{tools.unlisted}</span>}
					</p>
					<DataTable
						head={["Tool", "State", ""]}
						empty="It lists no tools."
						rows={tools.tools.map((tool) => [
							tool.name,
							`${STATE_WORDS[tool.state]}${tool.changedFields?.length ? `: ${tool.changedFields.join(", ")}` : ""}`,
							waiting.includes(tool.name) ? (
								<form method="post" action={`${action}/approve`}>
									<input type="hidden" name="tool" value={tool.name} />
									<button type="submit" aria-label={`Approve ${tool.name}`}>
										Approve
									</button>
								</form>
							) : null,
						])}
					/>
					{waiting.length > 1 || (!tools.recorded && tools.tools.length > 0) ? (
						<form method="post" action={`${action}/approve`}>
							<button type="submit">Approve every tool as listed now</button>
						</form>
					) : null}
				</>
			)}
			<h2>Remove</h2>
			<form method="post" action={`${action}/delete`}>
				<p>
					Its sessions end at their next recheck. <button type="submit">Delete server {name}</button>
				</p>
			</form>
			<p>
				<a href={DASHBOARD_HOME}>Back to the dashboard</a>
			</p>
		</>
	);
}

/** A time the admin API gave (ISO, or ms since the epoch), as the page shows it: UTC to the second. */
function shownTime(time: string | number): string {
	return new Date(time)
		.toISOString()
		.replace("T", " ")
		.replace(/\.\d+Z$/, " UTC");
}

/**
 * A server made from an OpenAPI document: where the document came from, where
 * its calls go, how many tools it made, and its credentials by security scheme
 * (as the admin API shows them: a literal masked, a `${UPSTREAM_…}` reference as written).
 */
function OpenApiDocument(props: { view: OpenApiView }) {
	const { view } = props;
	return (
		<>
			<h2>OpenAPI document</h2>
			<p>
				Document: {view.url === undefined ? "given inline (its text is kept in the registry)" : <code>{view.url}</code>}
				.
				<br />
				Base URL: {view.baseUrl === undefined ? "the document's first server" : <code>{view.baseUrl}</code>}.
				<br />
				Tools: {view.tools} (its operations, before shaping). The gateway answers them itself.
			</p>
			<DataTable
				head={["Security scheme", "Credential"]}
				empty="No credentials: its requests carry none, unless the server's auth gives the caller's."
				rows={Object.entries(view.credentials).map(([scheme, value]) => [scheme, <code>{value}</code>])}
			/>
		</>
	);
}

/** A server reached through connectors: who is online for it, and the tokens they present. */
function Connectors(props: { action: string; view: ConnectorsView }) {
	const { action, view } = props;
	return (
		<>
			<h2>Connectors online</h2>
			<DataTable
				head={["Connector", "Token", "Since", "Host", "Version", "Sessions"]}
				empty="No connector online."
				rows={view.online.map((connector) => [
					connector.id,
					connector.tokenId,
					shownTime(connector.since),
					connector.host,
					connector.version,
					`${connector.sessions}`,
				])}
			/>
			<h2>Connector tokens</h2>
			{"failed" in view.tokens ? (
				<p class="bad">{view.tokens.failed}</p>
			) : (
				<DataTable
					head={["Token", "Created", "Last seen", ""]}
					empty="No connector tokens: make one for each machine that runs a connector."
					rows={view.tokens.map((token) => [
						token.id,
						shownTime(token.createdAt),
						token.lastSeenAt === null ? "never" : shownTime(token.lastSeenAt),
						<form method="post" action={`${action}/connector-tokens/${encodeURIComponent(token.id)}/revoke`}>
							<button type="submit" aria-label={`Revoke ${token.id}`}>
								Revoke
							</button>
						</form>,
					])}
				/>
			)}
			<form method="post" action={`${action}/connector-tokens`}>
				<p>
					Its connectors online are dropped when their token is revoked.{" "}
					<button type="submit">Make a connector token</button>
				</p>
			</form>
		</>
	);
}

/** A new connector token, this once. */
export function NewConnectorTokenPage(props: { created: NewKey | null }) {
	const { created } = props;
	if (!created) {
		return (
			<>
				<h1>The connector token was shown once</h1>
				<p>
					A connector token is shown only on the page right after it is made; the gateway keeps only its digest. If it
					was not copied, revoke it and make another.
				</p>
				<p>
					<a href={DASHBOARD_HOME}>Back to the dashboard</a>
				</p>
			</>
		);
	}
	const server = created.name ?? "";
	return (
		<>
			<h1>Connector token for {server} made</h1>
			<p>Copy it now: it is shown this once, and the gateway keeps only its digest.</p>
			<p class="secret" id="new-connector-token">
				{created.key}
			</p>
			<p class="muted">
				Id {created.id}. A connector presents it: MCPGW_CONNECTOR_TOKEN=&lt;token&gt; mcpgw connect {server} -- …
			</p>
			<p>
				<a href={`${DASHBOARD_UI}/servers/${encodeURIComponent(server)}`}>Back to server {server}</a>
			</p>
		</>
	);
}

/** The new key, this once. */
export function NewKeyPage(props: { created: NewKey | null }) {
	const { created } = props;
	if (!created) {
		return (
			<>
				<h1>The key was shown once</h1>
				<p>
					A key's secret is shown only on the page right after it is created; the gateway keeps only its digest. If it
					was not copied, revoke the key and create another.
				</p>
				<p>
					<a href={`${DASHBOARD_HOME}#keys`}>Back to the keys</a>
				</p>
			</>
		);
	}
	return (
		<>
			<h1>Key {created.name ?? created.id} created</h1>
			<p>Copy it now: it is shown this once, and the gateway keeps only its digest.</p>
			<p class="secret" id="new-key">
				{created.key}
			</p>
			<p class="muted">
				Id {created.id}. Clients send it as {"Authorization: Bearer <key>"}.
			</p>
			<p>
				<a href={`${DASHBOARD_HOME}#keys`}>Back to the keys</a>
			</p>
		</>
	);
}
