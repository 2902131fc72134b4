/**
 * The ports of `npm start`: the gateway on a base port (8787 unless `--port N`
 * or `PORT` names another) and the local services beside it at fixed offsets
 * above it, so that one number moves them all, and every URL that names one
 * of them (the IdP's issuer, the JWKS the identity upstream trusts, the
 * registered upstreams) follows. `scripts/smoke-demo.ts` reads the same.
 */
import { connect } from "node:net";
import { parseArgs } from "node:util";
import { z } from "zod";
import { HOST } from "./processes.ts";

export const DEFAULT_BASE_PORT = 8787;

/** Each service's offset from the base port, and what to call it when its port is busy. */
export const LOCAL_SERVICES = {
	gateway: { offset: 0, role: "the gateway" },
	upstream: { offset: 1, role: "the demo upstream" },
	/** The demo upstream that speaks MCP 2026-07-28 only (stateless, no initialize). */
	modernUpstream: { offset: 2, role: "the 2026-07-28 demo upstream" },
	/** The local OpenID Connect provider the gateway federates OAuth sign-in to. */
	idp: { offset: 3, role: "the identity provider" },
	/** The demo upstream that takes each person's own OAuth token, with its own authorization server. */
	oauthUpstream: { offset: 4, role: "oauth-demo" },
	/** The demo upstream that verifies the gateway's identity assertions against its JWKS. */
	identityUpstream: { offset: 5, role: "whoami-demo" },
	/** The local OTLP/HTTP receiver the gateway's traces and metrics go to. */
	otlpReceiver: { offset: 6, role: "the trace receiver" },
	/** The demo REST API (rest-demo.ts) whose OpenAPI document the gateway makes a server of. */
	restDemo: { offset: 7, role: "rest-demo" },
	/** The MCP Apps extension's system monitor example (app-servers.ts): a tool whose View a host renders. */
	appDemo: { offset: 8, role: "system-monitor" },
} as const;

export type LocalService = keyof typeof LOCAL_SERVICES;
export type LocalPorts = Record<LocalService, number>;
const ALL_SERVICES = Object.keys(LOCAL_SERVICES) as LocalService[];

/** The highest offset: a base leaves room for it below 65536. */
const SPAN = Math.max(...Object.values(LOCAL_SERVICES).map((service) => service.offset));
/** Below 1024 a port needs root. */
const LOWEST_BASE = 1024;
const HIGHEST_BASE = 65_535 - SPAN;

const BasePortSchema = z.coerce.number().int().min(LOWEST_BASE).max(HIGHEST_BASE);

/** What the base port may be, for the sentence that refuses another. */
const BASE_RANGE = `a whole number from ${LOWEST_BASE} to ${HIGHEST_BASE} (the gateway's port; the services beside it take the ${SPAN} after it)`;

/**
 * The base port from `--port N` (first) or `PORT`, else 8787; or a sentence
 * saying what is wrong with the one given. `positionals` allows arguments
 * besides the option (smoke-demo's API key).
 */
export function basePortFrom(
	args: string[],
	env: NodeJS.ProcessEnv,
	options: { positionals?: boolean } = {},
): { base: number; positionals: string[] } | { problem: string } {
	let parsed: { values: { port?: string | undefined }; positionals: string[] };
	try {
		parsed = parseArgs({
			args,
			options: { port: { type: "string" } },
			allowPositionals: options.positionals ?? false,
		});
	} catch (error) {
		if (!(error instanceof TypeError)) throw error;
		// parseArgs names the argument it did not take.
		return { problem: `${error.message}. The only option is --port <base port>.` };
	}
	// An empty PORT is taken as unset, as shells leave it.
	const [source, value] =
		parsed.values.port !== undefined ? ["--port", parsed.values.port] : ["PORT", env.PORT || String(DEFAULT_BASE_PORT)];
	const base = BasePortSchema.safeParse(value);
	if (!base.success) return { problem: `${source} must be ${BASE_RANGE}, not '${value}'.` };
	return { base: base.data, positionals: parsed.positionals };
}

/** Every service's port for a base. */
export function localPorts(base: number): LocalPorts {
	const at = (service: LocalService) => base + LOCAL_SERVICES[service].offset;
	return {
		gateway: at("gateway"),
		upstream: at("upstream"),
		modernUpstream: at("modernUpstream"),
		idp: at("idp"),
		oauthUpstream: at("oauthUpstream"),
		identityUpstream: at("identityUpstream"),
		otlpReceiver: at("otlpReceiver"),
		restDemo: at("restDemo"),
		appDemo: at("appDemo"),
	};
}

/** Whether something already listens on `port` (checked first, so a busy port is named, not a child's EADDRINUSE). */
export function portBusy(port: number): Promise<boolean> {
	return new Promise((resolve) => {
		const socket = connect(port, HOST);
		socket.once("connect", () => {
			socket.destroy();
			resolve(true);
		});
		socket.once("error", () => resolve(false));
	});
}

/** The services among `wanted` whose ports are taken. */
export async function busyServices(ports: LocalPorts, wanted: readonly LocalService[]): Promise<LocalService[]> {
	const busy = await Promise.all(wanted.map(async (service) => ((await portBusy(ports[service])) ? [service] : [])));
	return busy.flat();
}

/** How many other bases the busy-port message tries for one whose ports are all free. */
const BASES_TRIED = 5;

/**
 * Why `npm start` cannot start: each busy port with what would have used it,
 * and how to start on other ports, with a base a thousand away (above, or
 * below near the top of the range) whose ports are all free now, if one is.
 */
export async function busyPortsMessage(base: number, ports: LocalPorts, busy: LocalService[]): Promise<string> {
	const named = busy.map((service) => `${ports[service]} (${LOCAL_SERVICES[service].role})`);
	const which = named.length === 1 ? `Port ${named[0]} is` : `Ports ${named.join(", ")} are`;
	const step = base + 1000 <= HIGHEST_BASE ? 1000 : -1000;
	const candidates = Array.from({ length: BASES_TRIED }, (_, index) => base + step * (index + 1)).filter(
		(candidate) => candidate >= LOWEST_BASE && candidate <= HIGHEST_BASE,
	);
	let free: number | undefined;
	for (const candidate of candidates) {
		if ((await busyServices(localPorts(candidate), ALL_SERVICES)).length === 0) {
			free = candidate;
			break;
		}
	}
	const other = free ?? base + step;
	return [
		`${which} already in use: is another 'npm start' running?`,
		`npm start takes a base port (now ${base}) and the ${SPAN} after it. To start on others:`,
		`npm start -- --port ${other}   (or PORT=${other} npm start)${free === undefined ? "" : `; ${other} to ${other + SPAN} are free now`}.`,
	].join("\n");
}
