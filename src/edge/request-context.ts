import type { Context } from "hono";
import type { Settings } from "../config.ts";
import type { Env } from "../env.ts";
import type { WaitUntil } from "../primitives/wait-until.ts";
import type { RegistryReader } from "../registry/registry-reader.ts";
import type { SessionScope } from "../session/session-do.ts";
import type { ServerOperation } from "../telemetry/server-operation.ts";
import type { Authenticated } from "./authenticate.ts";

/**
 * A request's context at the edge, set once by middleware (`c.set`) and read
 * with `c.get` wherever the request goes, instead of positional lists. The
 * Worker env is `c.env`. Read with `c.get`, not `c.var`: Hono's `c.var`
 * copies every value into a new object at each read.
 */
export interface EdgeVariables {
	/** The gateway's settings, parsed once per env (`settingsFrom`). */
	settings: Settings;
	/**
	 * The registry's read path for this request, the only one the edge uses:
	 * made once per request (the injected factory's reader, Workers KV by
	 * default), it rejects every failed read as `registry_unavailable` itself
	 * (`UnavailableOnFailure`), and it is the request's flight for the
	 * isolate's caches.
	 */
	reader: RegistryReader;
	/** Keeps background work alive after the response; a no-op without an execution context. */
	waitUntil: WaitUntil;
}

/** The app's Hono environment: the Worker's bindings and the request's context. */
export type EdgeContext = { Bindings: Env; Variables: EdgeVariables };

/**
 * Any request's context, as code that only reads it takes it (an MCP
 * request's included: a Hono `Context` is invariant in what it may `set`).
 */
export type EdgeRequestContext = Pick<Context<EdgeContext>, "env" | "req" | "get">;

/** An MCP request's context once it is admitted (`admitMcpRequest`): who calls, and the scope of their session. */
export interface McpVariables extends EdgeVariables {
	/** What the request's credential stands for: the key record (a person's in its shape), the caller, a subject token. */
	principal: Authenticated;
	/** The session scope of the request: the key, the user path, the endpoint and the caller. */
	scope: SessionScope;
	/**
	 * The request's server operation (its span, its `tool_call` event): set once a POST's body is read; null when
	 * nothing observes it, absent before (and for GET and DELETE, which are not operations).
	 */
	operation?: ServerOperation | null;
}

export type McpEndpointContext = { Bindings: Env; Variables: McpVariables };

/** An admitted MCP request, as the edge's MCP code takes it. */
export type McpContext = Context<McpEndpointContext>;
