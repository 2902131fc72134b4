import { OpenAPIHono, type RouteConfig } from "@hono/zod-openapi";
import type { Context, MiddlewareHandler } from "hono";
import { HTTPException } from "hono/http-exception";
import { z } from "zod";
import type { Env } from "../../env.ts";
import { ERROR_KINDS, GatewayError } from "../../mcp/gateway-error.ts";
import { describeIssues } from "../../registry/schemas.ts";
import { isJsonContentType } from "../transport-checks.ts";

export type AdminEnv = { Bindings: Env };
export type AdminRouter = OpenAPIHono<AdminEnv>;

/** Every admin refusal: `{ error: { kind, message } }` (rendered in app.ts). */
export const AdminErrorSchema = z.object({
	error: z.object({
		kind: z.enum(Object.keys(ERROR_KINDS) as [keyof typeof ERROR_KINDS, ...(keyof typeof ERROR_KINDS)[]]),
		message: z.string(),
	}),
});

const UNSUPPORTED_MEDIA_TYPE = "Unsupported Media Type: admin bodies must be application/json.";

/**
 * A router whose validation failures are the admin API's own 400s: a body
 * that fails its schema is "Bad Request: <field>: <problem>." as it always was.
 * (Names in paths are checked first by `admitted`, with their own sentence.)
 */
export function adminRouter(): AdminRouter {
	const router = new OpenAPIHono<AdminEnv>({
		defaultHook: (result) => {
			if (!result.success) throw new GatewayError("bad_request", `Bad Request: ${describeIssues(result.error)}.`);
		},
	});
	router.onError(fromValidator);
	return router;
}

/**
 * zod-openapi's media-type gate refuses with a bare HTTPException; `admitted`
 * has refused every such body before it, save spellings of JSON the gate reads
 * more strictly (`application/json;`): they get the admin 415 too.
 */
function fromValidator(error: Error): never {
	if (error instanceof HTTPException && error.status === 415) {
		throw new GatewayError("unsupported_media_type", UNSUPPORTED_MEDIA_TYPE, { cause: error });
	}
	if (error instanceof HTTPException && error.status === 400) {
		throw new GatewayError("bad_request", "Bad Request: the body is not valid JSON.", { cause: error });
	}
	throw error;
}

/** A path parameter and the words its refusal names it by ("server name must be …"). */
export interface NameParam {
	param: string;
	schema: z.ZodType<string>;
	what: string;
}

/** What a route checks before its body's schema, in the order the admin API always has. */
export interface Admission {
	/** The name in the path. */
	name?: NameParam;
	/** Query parameters the handler reads (it reads them again; this only keeps the order of refusals). */
	query?: (c: Context<AdminEnv>) => unknown;
	/** A JSON body: its media type (415), then its JSON. */
	body?: boolean;
}

/**
 * The checks the admin API made before a body's schema, in the order it always
 * did: the name in the path, the query, then the body's media type (415) and
 * its JSON, each with its own sentence. zod-openapi's validators run after it
 * and find these settled; only the body's schema is left to them.
 */
export function admitted({ name, query, body = false }: Admission): MiddlewareHandler<AdminEnv> {
	return async (c, next) => {
		if (name) {
			const parsed = name.schema.safeParse(c.req.param(name.param));
			if (!parsed.success) {
				throw new GatewayError("bad_request", `Bad Request: ${name.what} ${parsed.error.issues[0]?.message}.`);
			}
		}
		query?.(c);
		if (body) {
			if (!isJsonContentType(c.req.header("content-type") ?? null)) {
				throw new GatewayError("unsupported_media_type", UNSUPPORTED_MEDIA_TYPE);
			}
			try {
				await c.req.json();
			} catch (error) {
				throw new GatewayError("bad_request", "Bad Request: the body is not valid JSON.", { cause: error });
			}
		}
		await next();
	};
}

/** The answers every admin route may give besides its own: refusals in the admin error shape. */
const REFUSALS = {
	400: "Bad Request: a name, query parameter or body field is invalid; the message names it.",
	401: "The admin token is missing or wrong (`WWW-Authenticate: Bearer`).",
	405: "The path takes other methods; `Allow` lists them.",
	503: "The admin API is disabled: the ADMIN_TOKEN secret is not set.",
} as const;

type Responses = RouteConfig["responses"];

/** A refusal in the admin error shape, for a route's `responses`. */
export function refusal(description: string) {
	return { description, content: { "application/json": { schema: AdminErrorSchema } } };
}

/** A JSON answer, described in words (the views of admin-views.ts are not zod schemas). */
export function answer(description: string) {
	return { description, content: { "application/json": { schema: z.record(z.string(), z.unknown()) } } };
}

/** What a route declares: its own answers, with the refusals every admin route shares. */
export function withRefusals(own: Responses): Responses {
	const shared = Object.fromEntries(Object.entries(REFUSALS).map(([status, text]) => [status, refusal(text)]));
	return { ...shared, ...own };
}

/** The same, for a route that takes a JSON body: a body of another media type is refused too. */
export function withBodyRefusals(own: Responses): Responses {
	return withRefusals({ ...own, 415: refusal("The body is not application/json.") });
}

/** A create-or-replace PUT's two answers. */
export const REPLACED_OR_CREATED = { 200: answer("Replaced."), 201: answer("Created.") } as const;

/** A JSON request body, required, validated by zod-openapi against `schema`. */
export function jsonBody<T extends z.ZodType>(schema: T, description: string) {
	return { required: true, description, content: { "application/json": { schema } } } as const;
}

/** A query parameter, documented (the handlers read and check query parameters themselves, as they did). */
export function queryParam(name: string, description: string, schema: Record<string, unknown> = { type: "string" }) {
	return { name, in: "query" as const, required: false, description, schema };
}
