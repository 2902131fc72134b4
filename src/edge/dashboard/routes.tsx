import { type Context, type ExecutionContext, Hono } from "hono";
import type { Child } from "hono/jsx";
import { z } from "zod";
import { signedOutCookie, signInUrl } from "../../auth/browser-sign-in.ts";
import { safeReturnPath } from "../../auth/return-path.ts";
import { settingsFrom } from "../../config.ts";
import { describeError, GatewayError } from "../../mcp/gateway-error.ts";
import type { EdgeContext } from "../request-context.ts";
import { type AdminCaller, AdminRefused, callAdmin, segment } from "./admin-calls.ts";
import { readCallFigures } from "./call-figures.ts";
import { DASHBOARD_HOME, DASHBOARD_UI, dashboardPage, messageResponse, notAdminResponse, Shell } from "./layout.tsx";
import {
	clearedNewKeyCookie,
	NEW_CONNECTOR_TOKEN,
	NEW_CONNECTOR_TOKEN_PATH,
	NEW_KEY,
	NEW_KEY_PATH,
	type NewKey,
	newKeyCookie,
	openedNewKey,
	type ShownOnce,
} from "./new-key.ts";
import {
	adminSessionCookie,
	endedAdminSessionCookie,
	fromOwnPages,
	isAdminToken,
	type Operator,
	operatorActor,
	operatorOf,
} from "./operator.ts";
import { OverviewPage } from "./overview.tsx";
import { readOverview, serverDetail } from "./overview-data.ts";
import { NewConnectorTokenPage, NewKeyPage, ServerPage, SignInPage } from "./pages.tsx";

type DashboardContext = Context<EdgeContext>;

/** Form bodies, parsed (never cast): each field a string as browsers send them. */
const SignInFormSchema = z.object({ token: z.string().min(1).max(1024) });
const ServerFormSchema = z.object({
	name: z.string().max(64),
	url: z.string().max(2048),
	pinning: z.enum(["warn", "block", "off"]).default("warn"),
});
const ApproveFormSchema = z.object({ tool: z.string().min(1).max(256).optional() });
const DenyFormSchema = z.object({ reason: z.string().max(500).optional() });
const KeyFormSchema = z.object({ name: z.string().min(1).max(100), servers: z.string().max(4096).default("") });

/**
 * The operators' dashboard: `/admin/` and its pages under `/admin/ui/`.
 * Server-rendered, no script. Every page needs an operator (operator.ts);
 * every form post must come from these pages (Origin) and goes through the
 * admin API in-process (admin-calls.ts), then back to a page (303), so a
 * reload never repeats an action.
 */
export function createDashboardRoutes(): Hono<EdgeContext> {
	const routes = new Hono<EdgeContext>();

	routes.get("/admin", (c) => c.redirect(DASHBOARD_HOME, 308));

	routes.get(DASHBOARD_HOME, async (c) => {
		const operator = await signedIn(c);
		if (operator instanceof Response) return operator;
		const caller = callerOf(c, operator);
		const [overview, figures] = await Promise.all([readOverview(caller), readCallFigures(caller)]);
		return dashboardPage(
			200,
			"Gateway dashboard",
			<Shell operator={operator}>
				<OverviewPage overview={overview} figures={figures} peopleSignIn={peopleSignIn(c)} />
			</Shell>,
		);
	});

	routes.get(`${DASHBOARD_UI}/sign-in/person`, async (c) => {
		if (!peopleSignIn(c)) {
			return messageResponse(404, "No sign-in here", "This gateway does not sign people in (OIDC_ISSUER is not set).");
		}
		return c.redirect(signInUrl(returnOf(c, c.req.query("return"))), 303);
	});

	routes.get(`${DASHBOARD_UI}/sign-in`, (c) =>
		dashboardPage(
			200,
			"Sign in to the gateway dashboard",
			<SignInPage peopleSignIn={peopleSignIn(c)} returnTo={returnOf(c, c.req.query("return"))} />,
		),
	);

	routes.post(`${DASHBOARD_UI}/sign-in`, async (c) => {
		if (!fromOwnPages(c)) return crossOrigin();
		const fields = await formOf(c);
		const returnTo = returnOf(c, fields.return);
		const form = SignInFormSchema.safeParse(fields);
		if (!form.success || !(await isAdminToken(c.env, form.data.token))) {
			return dashboardPage(
				401,
				"Sign in to the gateway dashboard",
				<SignInPage peopleSignIn={peopleSignIn(c)} returnTo={returnTo} problem="That is not the admin token." />,
			);
		}
		const headers = new Headers({ location: returnTo });
		headers.append("set-cookie", await adminSessionCookie(c.env, new URL(c.req.url).origin));
		return new Response(null, { status: 303, headers });
	});

	routes.post(`${DASHBOARD_UI}/sign-out`, (c) => {
		if (!fromOwnPages(c)) return crossOrigin();
		const headers = new Headers({ location: DASHBOARD_HOME });
		const origin = new URL(c.req.url).origin;
		// Out of both ways in: the token's session, and the person's sign-in (the connections page's too).
		headers.append("set-cookie", endedAdminSessionCookie(origin));
		headers.append("set-cookie", signedOutCookie(origin));
		return new Response(null, { status: 303, headers });
	});

	routes.get(`${DASHBOARD_UI}/servers/:name`, async (c) => {
		const operator = await signedIn(c);
		if (operator instanceof Response) return operator;
		const name = c.req.param("name");
		const detail = await serverDetail(callerOf(c, operator), name);
		if ("failed" in detail.check && detail.check.status === 404) {
			return messageResponse(404, "No such server", detail.check.failed);
		}
		return dashboardPage(
			200,
			`Server ${name}`,
			<Shell operator={operator}>
				<ServerPage name={name} {...detail} />
			</Shell>,
		);
	});

	routes.post(`${DASHBOARD_UI}/servers`, (c) =>
		action(c, async (caller) => {
			const form = ServerFormSchema.parse(await formOf(c));
			await callAdmin(caller, "PUT", `/servers/${segment(form.name)}`, { url: form.url, pinning: form.pinning });
			return serverPage(form.name);
		}),
	);

	routes.post(`${DASHBOARD_UI}/approvals/:id/:decision{approve|deny}`, (c) =>
		action(c, async (caller) => {
			const decision = c.req.param("decision") === "approve" ? "approve" : "deny";
			const { reason } = decision === "deny" ? DenyFormSchema.parse(await formOf(c)) : {};
			const body = reason ? { decision, reason } : { decision };
			await callAdmin(caller, "POST", `/approvals/${segment(c.req.param("id"))}`, body);
			return `${DASHBOARD_HOME}#approvals`;
		}),
	);

	routes.post(`${DASHBOARD_UI}/servers/:name/approve`, (c) =>
		action(c, async (caller) => {
			const name = c.req.param("name");
			const form = ApproveFormSchema.parse(await formOf(c));
			await callAdmin(
				caller,
				"POST",
				`/servers/${segment(name)}/tools/approve`,
				form.tool ? { tools: [form.tool] } : {},
			);
			return serverPage(name);
		}),
	);

	routes.post(`${DASHBOARD_UI}/servers/:name/delete`, (c) =>
		action(c, async (caller) => {
			await callAdmin(caller, "DELETE", `/servers/${segment(c.req.param("name"))}`);
			return `${DASHBOARD_HOME}#servers`;
		}),
	);

	routes.post(`${DASHBOARD_UI}/keys`, async (c) => {
		const created = await actionResult(c, async (caller) => {
			const form = KeyFormSchema.parse(await formOf(c));
			const servers = form.servers
				.split(",")
				.map((server) => server.trim())
				.filter((server) => server !== "");
			const body = { name: form.name, ...(servers.length > 0 ? { servers } : {}) };
			return CreatedKeySchema.parse(await callAdmin(caller, "POST", "/keys", body));
		});
		return created instanceof Response ? created : toShownOnce(c, NEW_KEY, created);
	});

	routes.get(NEW_KEY_PATH, (c) =>
		shownOncePage(c, NEW_KEY, (created) => ({
			title: created ? "Key created" : "The key was shown once",
			page: <NewKeyPage created={created} />,
		})),
	);

	// A connector token: made (shown once, as a key is) and revoked through the admin API's own routes.
	routes.post(`${DASHBOARD_UI}/servers/:name/connector-tokens`, async (c) => {
		const name = c.req.param("name");
		const made = await actionResult(c, async (caller) =>
			MadeConnectorTokenSchema.parse(await callAdmin(caller, "POST", `/servers/${segment(name)}/connector-tokens`)),
		);
		if (made instanceof Response) return made;
		return toShownOnce(c, NEW_CONNECTOR_TOKEN, { id: made.id, name, key: made.token });
	});

	routes.get(NEW_CONNECTOR_TOKEN_PATH, (c) =>
		shownOncePage(c, NEW_CONNECTOR_TOKEN, (created) => ({
			title: created ? "Connector token made" : "The connector token was shown once",
			page: <NewConnectorTokenPage created={created} />,
		})),
	);

	routes.post(`${DASHBOARD_UI}/servers/:name/connector-tokens/:id/revoke`, (c) =>
		action(c, async (caller) => {
			const name = c.req.param("name");
			await callAdmin(caller, "DELETE", `/servers/${segment(name)}/connector-tokens/${segment(c.req.param("id"))}`);
			return serverPage(name);
		}),
	);

	routes.post(`${DASHBOARD_UI}/keys/:id/revoke`, (c) =>
		action(c, async (caller) => {
			await callAdmin(caller, "DELETE", `/keys/${segment(c.req.param("id"))}`);
			return `${DASHBOARD_HOME}#keys`;
		}),
	);

	routes.all(`${DASHBOARD_UI}/*`, () =>
		messageResponse(404, "Not a dashboard page", "There is no page at this address."),
	);

	// An operator reads these: every failure is a page with a sentence, the detail in the log.
	routes.onError((error) => {
		if (error instanceof AdminRefused) return messageResponse(error.status, "The gateway refused", error.message);
		if (error instanceof GatewayError)
			return messageResponse(error.status, "The dashboard cannot go on", error.message);
		console.error(`dashboard failed: ${describeError(error)}`);
		return messageResponse(
			500,
			"Something went wrong",
			"The dashboard could not finish this; the gateway's log says why.",
		);
	});
	return routes;
}

const CreatedKeySchema = z.object({ id: z.string(), name: z.string().nullish(), key: z.string() }).transform((key) => ({
	id: key.id,
	name: key.name ?? null,
	key: key.key,
}));

/** After a secret was made: to the page that shows it once, the secret sealed in that page's cookie (303). */
async function toShownOnce(c: DashboardContext, place: ShownOnce, created: NewKey): Promise<Response> {
	const headers = new Headers({ location: place.path });
	headers.append("set-cookie", await newKeyCookie(sessionSecretOf(c), new URL(c.req.url).origin, created, place));
	return new Response(null, { status: 303, headers });
}

/** The page that shows a secret once: it opens the cookie and clears it in the same answer. */
async function shownOncePage(
	c: DashboardContext,
	place: ShownOnce,
	render: (created: NewKey | null) => { title: string; page: Child },
): Promise<Response> {
	const operator = await signedIn(c);
	if (operator instanceof Response) return operator;
	const { title, page } = render(await openedNewKey(sessionSecretOf(c), c.req.raw, place));
	const headers = new Headers({ "set-cookie": clearedNewKeyCookie(new URL(c.req.url).origin, place) });
	return dashboardPage(200, title, <Shell operator={operator}>{page}</Shell>, headers);
}

const MadeConnectorTokenSchema = z.object({ id: z.string(), token: z.string() });

function serverPage(name: string): string {
	return `${DASHBOARD_UI}/servers/${encodeURIComponent(name)}`;
}

/** Where a sign-in goes back to: the page asked for when it is one of the gateway's own, else the overview. */
function returnOf(c: DashboardContext, requested: string | undefined): string {
	return safeReturnPath(requested, new URL(c.req.url).origin, DASHBOARD_HOME);
}

function peopleSignIn(c: DashboardContext): boolean {
	return settingsFrom(c.env).oauth.mode === "gateway";
}

function sessionSecretOf(c: DashboardContext): string {
	const secret = settingsFrom(c.env).sessionSecret;
	if (!secret) throw new GatewayError("misconfigured", "The gateway is misconfigured: SESSION_SECRET is not set.");
	return secret;
}

function callerOf(c: DashboardContext, operator: Operator): AdminCaller {
	let ctx: ExecutionContext | undefined;
	try {
		ctx = c.executionCtx;
	} catch (error) {
		// Hono throws when the app is called without one (a test calling it directly): nothing runs on after.
		if (!(error instanceof Error)) throw error;
		ctx = undefined;
	}
	return { actor: operatorActor(operator), env: c.env, ctx };
}

/** The operator, or the page that stands in for them: sign-in (401) or refusal (403). */
async function signedIn(c: DashboardContext): Promise<Operator | Response> {
	const operator = await operatorOf(c);
	if (!("refused" in operator)) return operator;
	if (operator.refused === "not-admin") return notAdminResponse(operator.identity);
	// A page asked for comes back after the sign-in; a form post goes back to the overview.
	const url = new URL(c.req.url);
	const here = c.req.method === "GET" ? `${url.pathname}${url.search}` : DASHBOARD_HOME;
	return dashboardPage(
		401,
		"Sign in to the gateway dashboard",
		<SignInPage peopleSignIn={peopleSignIn(c)} returnTo={returnOf(c, here)} />,
	);
}

function crossOrigin(): Promise<Response> {
	return messageResponse(
		403,
		"Refused",
		"This form may only be sent from the dashboard's own pages; nothing was changed.",
	);
}

/** A form post: from these pages, by an operator; its result, or the page that refuses it. */
async function actionResult<T>(c: DashboardContext, act: (caller: AdminCaller) => Promise<T>): Promise<T | Response> {
	if (!fromOwnPages(c)) return crossOrigin();
	const operator = await signedIn(c);
	if (operator instanceof Response) return operator;
	try {
		return await act(callerOf(c, operator));
	} catch (error) {
		if (error instanceof z.ZodError) {
			return messageResponse(400, "The form was not filled in as it should be", "Nothing was changed.");
		}
		throw error;
	}
}

/** A form post that changes something, then goes to the page `act` names (303). */
async function action(c: DashboardContext, act: (caller: AdminCaller) => Promise<string>): Promise<Response> {
	const location = await actionResult(c, act);
	return location instanceof Response ? location : c.redirect(location, 303);
}

async function formOf(c: DashboardContext): Promise<Record<string, string>> {
	const type = c.req.header("content-type") ?? "";
	if (!type.startsWith("application/x-www-form-urlencoded") && !type.startsWith("multipart/form-data")) return {};
	let form: FormData;
	try {
		form = await c.req.raw.formData();
	} catch (error) {
		// A body that does not parse as the form it claims to be is an empty form: its fields are then missing.
		if (error instanceof TypeError) return {};
		throw error;
	}
	const fields: Record<string, string> = {};
	for (const [name, value] of form) if (typeof value === "string") fields[name] = value;
	return fields;
}
