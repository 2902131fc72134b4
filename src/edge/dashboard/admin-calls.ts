import { type ExecutionContext, Hono } from "hono";
import { z } from "zod";
import { settingsFrom } from "../../config.ts";
import type { Env } from "../../env.ts";
import { GatewayError } from "../../mcp/gateway-error.ts";
import { ADMIN_PREFIX, adminErrorResponse, createAdminRoutes } from "../admin-routes.ts";

/**
 * The dashboard's one way to read and change the registry: the admin API
 * itself, called in-process with the admin token, so every action passes the
 * same zod validation and writes the same audit line as `mcpgw` or curl.
 * The router is built once per isolate, as app.ts builds it.
 */
let api: Hono<{ Bindings: Env }> | undefined;

function adminApi(): Hono<{ Bindings: Env }> {
	if (!api) {
		const built = new Hono<{ Bindings: Env }>();
		built.route(ADMIN_PREFIX, createAdminRoutes());
		built.notFound(() =>
			adminErrorResponse(new GatewayError("not_found", "Not Found: that is not a route of the admin API.")),
		);
		built.onError((error) => {
			if (error instanceof GatewayError) return adminErrorResponse(error);
			throw error;
		});
		api = built;
	}
	return api;
}

/** What the admin API answered: its status and its JSON (null for 204). */
export interface AdminAnswer {
	status: number;
	body: unknown;
}

const AdminRefusalSchema = z.object({ error: z.object({ kind: z.string(), message: z.string() }) });

/** The admin API refused: its status and its sentence, shown to the operator as they are. */
export class AdminRefused extends Error {
	constructor(
		readonly status: number,
		message: string,
	) {
		super(message);
	}
}

export interface AdminCaller {
	/** Who acts, for the `dashboard_action` line each change writes before the admin API's own `admin_audit`. */
	actor: string;
	env: Env;
	/** The request's execution context, for what the admin API finishes in the background. */
	ctx: ExecutionContext | undefined;
}

/** One admin API call, `/admin<path>`; an answer outside 2xx throws `AdminRefused` with the API's sentence. */
export async function callAdmin(caller: AdminCaller, method: string, path: string, body?: unknown): Promise<unknown> {
	const request = adminRequest(caller, method, path, body);
	// The admin API's audit line says "admin" (the token); this one says which operator held it.
	if (method !== "GET") {
		console.log(
			JSON.stringify({ event: "dashboard_action", actor: caller.actor, method, path: `${ADMIN_PREFIX}${path}` }),
		);
	}
	const response = await adminApi().fetch(request, caller.env, caller.ctx);
	const text = await response.text();
	const json: unknown = text === "" ? null : JSON.parse(text);
	if (!response.ok) {
		const refusal = AdminRefusalSchema.safeParse(json);
		throw new AdminRefused(
			response.status,
			refusal.success ? refusal.data.error.message : `The admin API answered ${response.status}.`,
		);
	}
	return json;
}

/**
 * The admin API's own answer to a read, passed on as it is: its status,
 * headers and body (the reference page is HTML, its document JSON).
 */
export async function readAdminAnswer(caller: AdminCaller, path: string): Promise<Response> {
	return await adminApi().fetch(adminRequest(caller, "GET", path), caller.env, caller.ctx);
}

/** A request to the admin API carrying the admin token; refused when there is no token to carry. */
function adminRequest(caller: AdminCaller, method: string, path: string, body?: unknown): Request {
	const token = settingsFrom(caller.env).adminToken;
	if (!token) throw new AdminRefused(503, "The admin API is disabled: the ADMIN_TOKEN secret is not set.");
	const headers: Record<string, string> = { authorization: `Bearer ${token}` };
	if (body !== undefined) headers["content-type"] = "application/json";
	return new Request(`https://admin.internal${ADMIN_PREFIX}${path}`, {
		method,
		headers,
		body: body === undefined ? undefined : JSON.stringify(body),
	});
}

/** A call whose answer is parsed with `schema`: what the dashboard shows, and nothing it does not. */
export async function readAdmin<T>(caller: AdminCaller, path: string, schema: z.ZodType<T>): Promise<T> {
	return schema.parse(await callAdmin(caller, "GET", path));
}

/** Path segments as the admin API takes them. */
export function segment(value: string): string {
	return encodeURIComponent(value);
}
