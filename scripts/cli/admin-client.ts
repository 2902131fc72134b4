/**
 * The admin API as the CLI sees it: JSON requests with the admin token, and
 * one error type whose message is the API's own sentence.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";

/** Where `npm start` and `wrangler dev` serve the gateway by default. */
export const DEFAULT_URL = "http://127.0.0.1:8787";
/** Long enough for a server's check (bounded by the gateway) on a slow upstream. */
const REQUEST_TIMEOUT_MS = 30_000;

/** A refusal or failure the CLI reports as it is and exits non-zero for. */
export class CliError extends Error {
	override name = "CliError";
	/** The HTTP status, when the gateway answered. */
	readonly status: number | undefined;
	constructor(message: string, options: { status?: number; cause?: unknown } = {}) {
		super(message, { cause: options.cause });
		this.status = options.status;
	}
}

export interface Connection {
	url: string;
	/** Absent: only routes that need no admin token can be used. */
	adminToken: string | undefined;
	/** Where the token came from (`MCPGW_ADMIN_TOKEN`, or a .dev.vars file), for the sentence when it is refused. */
	tokenSource?: string;
}

/** The environment variable the admin token is read from. */
const TOKEN_VARIABLE = "MCPGW_ADMIN_TOKEN";

/** The `ADMIN_TOKEN` of `.dev.vars` in `dir`, as `npm start` writes it (`NAME="value"`). */
export function devVarsAdminToken(dir: string): string | undefined {
	const path = join(dir, ".dev.vars");
	if (!existsSync(path)) return undefined;
	const match = /^\s*ADMIN_TOKEN\s*=\s*(?:"([^"\n]*)"|'([^'\n]*)'|([^\n]*?))\s*$/m.exec(readFileSync(path, "utf8"));
	return match?.[1] ?? match?.[2] ?? match?.[3] ?? undefined;
}

function isLoopback(url: string): boolean {
	const host = URL.parse(url)?.hostname ?? "";
	return host === "127.0.0.1" || host === "localhost" || host === "[::1]";
}

/**
 * `--url`, else `MCPGW_URL`, else the local default; the token from
 * `MCPGW_ADMIN_TOKEN`, else (for a gateway on this machine only) `.dev.vars`.
 */
export function resolveConnection(
	options: { url?: string | undefined },
	env = process.env,
	cwd = process.cwd(),
): Connection {
	const url = (options.url ?? env.MCPGW_URL ?? DEFAULT_URL).replace(/\/+$/, "");
	if (!URL.canParse(url)) throw new CliError(`--url: '${url}' is not a URL (like ${DEFAULT_URL}).`);
	if (env[TOKEN_VARIABLE]) return { url, adminToken: env[TOKEN_VARIABLE], tokenSource: TOKEN_VARIABLE };
	const adminToken = isLoopback(url) ? devVarsAdminToken(cwd) : undefined;
	return adminToken ? { url, adminToken, tokenSource: join(cwd, ".dev.vars") } : { url, adminToken };
}

/**
 * What to do when the gateway refuses the admin token (401): which token was
 * sent, from where, and where the right one is.
 */
function refusedToken({ url, tokenSource }: Connection): string {
	const refused = `The gateway at ${url} refused the admin token`;
	if (tokenSource === TOKEN_VARIABLE) {
		return `${refused} in ${TOKEN_VARIABLE} (HTTP 401): set ${TOKEN_VARIABLE} to the gateway's ADMIN_TOKEN (the secret given to \`npx wrangler secret put ADMIN_TOKEN\`; for a gateway on this machine, ADMIN_TOKEN in the .dev.vars of the clone that runs it).`;
	}
	return `${refused} from ${tokenSource} (HTTP 401): it is not the ADMIN_TOKEN this gateway runs with. Run mcpgw in the clone that runs the gateway (npm start writes its .dev.vars), or set ${TOKEN_VARIABLE} to the gateway's ADMIN_TOKEN.`;
}

/** The `error.message` of an admin API error body, or a sentence for a reply that is not one. */
function errorMessage(status: number, text: string): string {
	try {
		const body = JSON.parse(text) as { error?: { message?: unknown } };
		if (typeof body.error?.message === "string") return body.error.message;
	} catch (error) {
		if (!(error instanceof SyntaxError)) throw error;
	}
	return `the gateway answered HTTP ${status}${text ? `: ${text.slice(0, 200)}` : ""}`;
}

export class AdminClient {
	readonly connection: Connection;
	constructor(connection: Connection) {
		this.connection = connection;
	}

	/** `/admin<path>`; resolves to the parsed JSON (undefined for 204), throws CliError on any other status. */
	async request<T>(method: string, path: string, body?: unknown): Promise<T> {
		const { url, adminToken } = this.connection;
		if (!adminToken) {
			throw new CliError(
				`No admin token: set ${TOKEN_VARIABLE} to the gateway's ADMIN_TOKEN (or, for a gateway on this machine, run from the clone whose .dev.vars holds ADMIN_TOKEN).`,
			);
		}
		const headers: Record<string, string> = { authorization: `Bearer ${adminToken}` };
		if (body !== undefined) headers["content-type"] = "application/json";
		const response = await this.fetch(`${url}/admin${path}`, {
			method,
			headers,
			body: body === undefined ? undefined : JSON.stringify(body),
		});
		const text = await response.text();
		if (response.status === 401) throw new CliError(refusedToken(this.connection), { status: 401 });
		if (!response.ok) throw new CliError(errorMessage(response.status, text), { status: response.status });
		return (text ? JSON.parse(text) : undefined) as T;
	}

	/** A request anywhere on the gateway, failing with a sentence when it cannot be reached. */
	async fetch(target: string, init: RequestInit = {}): Promise<Response> {
		try {
			return await fetch(target, { ...init, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
		} catch (error) {
			const cause = (error as { cause?: { code?: string; message?: string } }).cause;
			const why = cause?.code ?? cause?.message ?? (error as Error).message;
			throw new CliError(`Could not reach the gateway at ${this.connection.url} (${why}); is it running?`, {
				cause: error,
			});
		}
	}
}
