/**
 * The connector's life: dial the gateway, serve its requests, dial again
 * with backoff when the connection is lost, and on SIGINT or SIGTERM drain
 * (no new sessions, calls in flight finish, bounded) and stop. Ends with an
 * error (exit 1) only when the gateway will not have it: a refused or revoked
 * token.
 */
import { CliError } from "../admin-client.ts";
import { type BackoffSettings, backoffDelayMs, lastedLongEnough } from "./backoff.ts";
import type { EnvFromHeader } from "./child-environment.ts";
import { logLine, seconds } from "./connect-log.ts";
import { GatewayLink, type LinkEnd } from "./gateway-link.ts";
import { HttpUpstream } from "./http-upstream.ts";
import { type IncomingCall, RequestRuns } from "./request-runs.ts";
import { drainingRefusal, startsSession } from "./session-refusals.ts";
import type { StdioCommand } from "./stdio-session.ts";
import { StdioSessions } from "./stdio-sessions.ts";
import { StopSignals } from "./stop-signals.ts";
import type { Timers } from "./timers.ts";

export type ConnectorMode =
	| { kind: "stdio"; command: StdioCommand; envFromHeaders: EnvFromHeader[] }
	| { kind: "http"; upstream: string };

export interface ConnectorOptions {
	server: string;
	/** `ws(s)://<gateway>/connector/<server>`. */
	socketUrl: string;
	token: string;
	mode: ConnectorMode;
	maxSessions: number;
	drainMs: number;
	heartbeatMs: number;
	backoff: BackoffSettings;
	version: string;
	host: string;
	timers: Timers;
	random: () => number;
}

interface Upstream {
	handle(call: IncomingCall): Promise<Response>;
	stopTakingSessions(): void;
	closeAll(reason: string): Promise<void>;
}

function upstreamFor(options: ConnectorOptions): Upstream {
	const { mode } = options;
	if (mode.kind === "stdio") {
		const sessions = new StdioSessions({
			command: mode.command,
			maxSessions: options.maxSessions,
			envFromHeaders: mode.envFromHeaders,
			inherited: process.env,
		});
		return {
			// A child speaks MCP over stdio only: it publishes no documents (no OAuth metadata) to read.
			handle: (call) => (call.path === undefined ? sessions.handle(call) : Promise.resolve(noDocument(call.path))),
			stopTakingSessions: () => sessions.stopTakingSessions(),
			closeAll: (reason) => sessions.closeAll(reason),
		};
	}
	const http = new HttpUpstream(mode.upstream, options.server);
	let draining = false;
	return {
		handle: (call) => (draining && startsSession(call) ? Promise.resolve(drainingRefusal(call)) : http.handle(call)),
		stopTakingSessions: () => {
			draining = true;
		},
		closeAll: async () => {},
	};
}

function noDocument(path: string): Response {
	return Response.json(
		{ error: "not_found", error_description: `a stdio server publishes no ${path} document` },
		{ status: 404 },
	);
}

/** Runs until stopped by a signal (resolves) or refused by the gateway (rejects with a CliError). */
export async function runConnector(options: ConnectorOptions): Promise<void> {
	const { server, timers } = options;
	const upstream = upstreamFor(options);
	let link: GatewayLink | undefined;
	const runs = new RequestRuns(
		(frame) => link?.send(frame),
		(call) => upstream.handle(call),
		() => link?.writable() ?? Promise.resolve(),
	);
	const signals = new StopSignals();
	let attempt = 0;
	try {
		for (;;) {
			link = dial(options, runs);
			const end = await Promise.race([link.ended, signals.first]);
			if (end === "stop") {
				await drain(options, link, runs, upstream, signals);
				return;
			}
			runs.cancelAll("the connection to the gateway was lost");
			if (end.kind === "refused" || end.kind === "revoked") {
				await upstream.closeAll("the connector stopped");
				throw new CliError(refusedSentence(server, end));
			}
			// The gateway keeps a session on the connection that opened it; a new connection is a new
			// connector to it, so these sessions cannot be reached again: their children end now rather
			// than hold places under --max-sessions until the connector stops.
			await upstream.closeAll("the connection to the gateway was lost");
			if (end.kind === "closed") return;
			if (lastedLongEnough(options.backoff, end.lastedMs)) attempt = 0;
			const delay = backoffDelayMs(attempt, options.backoff, options.random);
			attempt += 1;
			logLine(`disconnected (${end.why}); reconnecting in ${seconds(delay)}`);
			let wait: NodeJS.Timeout | undefined;
			const waited = await Promise.race([
				new Promise<"waited">((resolve) => {
					wait = timers.setTimeout(() => resolve("waited"), delay);
				}),
				signals.first,
			]);
			if (wait) timers.clearTimeout(wait);
			if (waited === "stop") {
				await upstream.closeAll("the connector stopped");
				logLine("stopped");
				return;
			}
		}
	} finally {
		signals.dispose();
	}
}

function dial(options: ConnectorOptions, runs: RequestRuns): GatewayLink {
	return new GatewayLink({
		url: options.socketUrl,
		token: options.token,
		hello: {
			type: "hello",
			protocol: 1,
			version: options.version,
			host: options.host,
			mode: options.mode.kind,
			maxSessions: options.maxSessions,
		},
		heartbeatMs: options.heartbeatMs,
		timers: options.timers,
		welcomed: (connectorId) => logLine(`connected to ${options.socketUrl} as ${connectorId}`),
		received: (frame) => {
			if (frame.type === "request") runs.start(frame);
			else if (frame.type === "cancel") runs.cancel(frame.id);
		},
	});
}

/** SIGINT/SIGTERM: no new sessions, the calls in flight finish (at most drainMs; a second signal cuts it short), then stop. */
async function drain(
	options: ConnectorOptions,
	link: GatewayLink,
	runs: RequestRuns,
	upstream: Upstream,
	signals: StopSignals,
): Promise<void> {
	upstream.stopTakingSessions();
	link.send({ type: "draining" });
	logLine(`draining: ${runs.calls} call(s) in flight, waiting up to ${seconds(options.drainMs)}`);
	let bound: NodeJS.Timeout | undefined;
	await Promise.race([
		runs.idle(),
		link.ended,
		signals.second,
		new Promise<void>((resolve) => {
			bound = options.timers.setTimeout(resolve, options.drainMs);
		}),
	]);
	if (bound) options.timers.clearTimeout(bound);
	if (runs.calls > 0) logLine(`stopping with ${runs.calls} call(s) unfinished`);
	runs.cancelAll("the connector stopped");
	await upstream.closeAll("the connector stopped");
	link.close(1000, "connector stopped");
	logLine("stopped");
}

function refusedSentence(server: string, end: Extract<LinkEnd, { kind: "refused" | "revoked" }>): string {
	if (end.kind === "refused") return `the gateway refused the connector token for ${server}: ${end.message}`;
	return `the gateway refused the connector token for ${server}: it was revoked or the server deleted (${end.reason})`;
}
