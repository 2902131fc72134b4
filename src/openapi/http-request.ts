import type { CompiledApi, CompiledBody, CompiledOperation, CompiledParameter } from "../registry/openapi-records.ts";
import { GATEWAY_SET_HEADERS } from "../registry/schemas.ts";
import { type ArgumentProblem, cookiePairs, headerValue, pathValue, queryPairs } from "./parameter-style.ts";
import { type CallCredentials, placeCredentials } from "./security.ts";

export type { CallCredentials };

/*
 * A tool call made the one HTTP request its operation describes. Every value
 * a caller gives goes where the document puts it and nowhere else: a path
 * value stays inside its segment, a query value inside its pair, a header
 * value on its line. Anything that cannot be sent so is refused with a
 * sentence naming the argument, before anything leaves the gateway.
 */

/** Header parameters OpenAPI says to ignore (3.1 §4.8.12.1): the request's own fields set them. */
const IGNORED_HEADER_PARAMETERS = new Set(["accept", "content-type", "authorization"]);

/** Methods whose requests carry no body: `fetch` refuses one for them. */
const BODYLESS_METHODS = new Set(["GET", "HEAD"]);

/** A template variable of the path: `{name}`. */
const PATH_VARIABLE = /\{([^{}]+)\}/g;

export interface BuiltRequest {
	url: string;
	init: RequestInit & { method: string; headers: Headers };
}

/** Whether a tool argument is given: absent and JSON null both mean "not given". */
function given(value: unknown): boolean {
	return value !== undefined && value !== null;
}

function missing(parameter: CompiledParameter): ArgumentProblem {
	return {
		problem: `The argument "${parameter.property}" is required: it is the ${parameter.in} parameter "${parameter.name}".`,
	};
}

/**
 * The path with each `{name}` replaced by its parameter's value. A segment a value made `.` or
 * `..` is refused: no encoding keeps it one, since URL parsers (WHATWG's, Workers' own) read
 * `%2E` as a dot too and would step the path up (decision 0098). An empty value is refused as
 * well: it would name the collection instead of one of its members.
 */
function expandPath(operation: CompiledOperation, args: Record<string, unknown>): string | ArgumentProblem {
	const byName = new Map<string, CompiledParameter>();
	for (const parameter of operation.parameters) if (parameter.in === "path") byName.set(parameter.name, parameter);
	const segments: string[] = [];
	for (const segment of operation.path.split("/")) {
		let problem: ArgumentProblem | null = null;
		const properties: string[] = [];
		const expanded = segment.replace(PATH_VARIABLE, (variable, name: string) => {
			const parameter = byName.get(name);
			if (parameter === undefined) {
				problem ??= {
					problem: `The operation's path ${operation.path} names {${name}}, which none of its parameters defines; the API's document needs mending.`,
				};
				return variable;
			}
			// A path parameter is always required (OpenAPI 3.1 §4.8.12.2): without it there is no URL.
			const argument = args[parameter.property];
			if (!given(argument)) {
				problem ??= missing(parameter);
				return variable;
			}
			const value = pathValue(parameter, argument);
			if (typeof value !== "string") {
				problem ??= value;
				return variable;
			}
			if (value === "") {
				problem ??= {
					problem: `The argument "${parameter.property}" is empty; the path parameter "${parameter.name}" needs a value.`,
				};
			}
			properties.push(parameter.property);
			return value;
		});
		if (problem !== null) return problem;
		if (properties.length > 0 && (expanded === "." || expanded === "..")) {
			return {
				problem: `The argument "${properties.join('" and "')}" makes the path segment "${expanded}", which a URL would take as a step in the path, not as a value; it cannot be sent.`,
			};
		}
		segments.push(expanded);
	}
	return segments.join("/");
}

/** The body as its media type says: JSON text, or a form's pairs (lists as repeated keys, objects as JSON). */
function bodyOf(body: CompiledBody, value: unknown): { text: string; contentType: string } | ArgumentProblem {
	const mediaType = body.mediaType.toLowerCase();
	if (mediaType === "application/json" || mediaType.endsWith("+json")) {
		return { text: JSON.stringify(value), contentType: body.mediaType };
	}
	if (mediaType === "application/x-www-form-urlencoded") {
		if (typeof value !== "object" || value === null || Array.isArray(value)) {
			return { problem: `The argument "${body.property}" must be an object: the API takes this body as a form.` };
		}
		const form = new URLSearchParams();
		for (const [key, field] of Object.entries(value)) {
			for (const item of Array.isArray(field) ? field : [field]) {
				if (item === undefined || item === null) continue;
				form.append(key, typeof item === "object" ? JSON.stringify(item) : String(item));
			}
		}
		return { text: form.toString(), contentType: body.mediaType };
	}
	return {
		problem: `The operation's body is ${body.mediaType}, which the gateway cannot build; the operation can be called only without one.`,
	};
}

/**
 * The HTTP request a call of `operation` with `args` becomes: the URL (the API's base URL, the
 * path, the query), the method, the server's headers (MCP's transport headers left out), the
 * parameters' headers and cookies, `Accept` from the operation, the body, and the credentials
 * the operation's security asks for. Redirects are not followed (`redirect: "manual"`), as for
 * any upstream. A required argument missing, or a value its style cannot write, is a problem.
 *
 * @example
 * const built = buildRequest(api, operation, { petId: "a/b" }, { credentials, headers: {} });
 * if ("problem" in built) return toolError(built.problem);
 * const response = await fetch(built.url, built.init); // GET https://api.example/pets/a%2Fb
 */
export function buildRequest(
	api: CompiledApi,
	operation: CompiledOperation,
	args: Record<string, unknown>,
	options: { credentials: CallCredentials; headers: Record<string, string> },
): BuiltRequest | ArgumentProblem {
	const path = expandPath(operation, args);
	if (typeof path !== "string") return path;

	const headers = new Headers();
	// The gateway's own headers (the MCP transport's, and those this request sets itself) are not the caller's to give.
	for (const [name, value] of Object.entries(options.headers)) {
		if (!GATEWAY_SET_HEADERS.has(name.toLowerCase())) headers.set(name, value);
	}
	const query: string[] = [];
	const cookies: string[] = [];
	for (const parameter of operation.parameters) {
		if (parameter.in === "path") continue;
		if (parameter.in === "header" && IGNORED_HEADER_PARAMETERS.has(parameter.name.toLowerCase())) continue;
		const value = args[parameter.property];
		if (!given(value)) {
			if (parameter.required) return missing(parameter);
			continue;
		}
		if (parameter.in === "header") {
			const text = headerValue(parameter, value);
			if (typeof text !== "string") return text;
			headers.set(parameter.name, text);
			continue;
		}
		const pairs = parameter.in === "query" ? queryPairs(parameter, value) : cookiePairs(parameter, value);
		if (!Array.isArray(pairs)) return pairs;
		(parameter.in === "query" ? query : cookies).push(...pairs);
	}
	if (operation.accept !== null) headers.set("accept", operation.accept);

	let body: string | undefined;
	if (operation.body !== null) {
		const value = args[operation.body.property];
		if (given(value)) {
			if (BODYLESS_METHODS.has(operation.method)) {
				return {
					problem: `A ${operation.method} request carries no body; the argument "${operation.body.property}" cannot be sent.`,
				};
			}
			const built = bodyOf(operation.body, value);
			if ("problem" in built) return built;
			body = built.text;
			headers.set("content-type", built.contentType);
		} else if (operation.body.required) {
			return { problem: `The argument "${operation.body.property}" is required: it is the request's body.` };
		}
	}

	const credentialQuery = new URLSearchParams();
	placeCredentials(api, operation, options.credentials, { headers, query: credentialQuery, cookies });
	if (credentialQuery.size > 0) query.push(credentialQuery.toString());
	if (cookies.length > 0) {
		const configured = headers.get("cookie");
		headers.set("cookie", [...(configured === null ? [] : [configured]), ...cookies].join("; "));
	}

	const url = `${api.baseUrl}${path}${query.length > 0 ? `?${query.join("&")}` : ""}`;
	return { url, init: { method: operation.method, headers, body, redirect: "manual" } };
}
