import type { Child } from "hono/jsx";
import { page, pageResponse } from "../../auth/pages.ts";
import type { Identity } from "../../registry/access-rules.ts";
import { type Operator, operatorLabel } from "./operator.ts";
import { DASHBOARD_STYLE } from "./style.ts";

/** Where the dashboard lives: the overview, and its own routes under /admin/ui (the admin API has the rest of /admin). */
export const DASHBOARD_HOME = "/admin/";
export const DASHBOARD_UI = "/admin/ui";

/** A dashboard page as a response: the shared stylesheet and the dashboard's, never cached or framed. */
export async function dashboardPage(status: number, title: string, body: Child, headers?: Headers): Promise<Response> {
	// Hono's JSX escapes every value it renders: names an attacker chose arrive as text.
	const html = (await (<>{body}</>).toString()).toString();
	return pageResponse(status, page(title, html, { wide: true, ownStyle: DASHBOARD_STYLE }), headers);
}

/** The header every signed-in page carries: where you are, who you are, and signing out. */
export function Shell(props: { operator: Operator; children: Child }) {
	return (
		<>
			<header>
				<p>
					<a href={DASHBOARD_HOME}>
						<strong>Gateway dashboard</strong>
					</a>
				</p>
				<form method="post" action={`${DASHBOARD_UI}/sign-out`}>
					<span class="muted">Signed in with {operatorLabel(props.operator)}. </span>
					<button type="submit">Sign out</button>
				</form>
			</header>
			{props.children}
		</>
	);
}

/** A page with a heading, a sentence and a way back. */
export function Message(props: { title: string; sentence: string; back?: { href: string; label: string } }) {
	return (
		<>
			<h1>{props.title}</h1>
			<p>{props.sentence}</p>
			{props.back ? (
				<p>
					<a href={props.back.href}>{props.back.label}</a>
				</p>
			) : null}
		</>
	);
}

/** A message page as a response. */
export function messageResponse(
	status: number,
	title: string,
	sentence: string,
	back: { href: string; label: string } | undefined = { href: DASHBOARD_HOME, label: "Back to the dashboard" },
	headers?: Headers,
): Promise<Response> {
	return dashboardPage(status, title, <Message title={title} sentence={sentence} back={back} />, headers);
}

/** The page for a person signed in whose access rule does not grant admin (403), naming who they are. */
export function notAdminResponse(identity: Identity): Promise<Response> {
	const who = identity.email ?? identity.subject;
	return messageResponse(
		403,
		"Your account may not run this gateway",
		`You are signed in as ${who}, and your access rule does not grant admin. Ask the gateway's operator, or sign in with the admin token.`,
		{ href: `${DASHBOARD_UI}/sign-in`, label: "Sign in with the admin token" },
	);
}
