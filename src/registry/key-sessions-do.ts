import { DurableObject } from "cloudflare:workers";
import { settingsFrom } from "../config.ts";
import type { Env } from "../env.ts";
import { GatewayError, type GatewayErrorOptions } from "../mcp/gateway-error.ts";
import { limitHolderOf, parsePrincipalId } from "./access-rules.ts";

/**
 * The live sessions of one API key or one person (one instance per limit
 * holder: `limitHolderOf`), so that neither holds more than its cap however
 * many edges, clients or sign-ins open sessions at once:
 * admissions are serialized here. The edge admits a session before opening
 * it; the session releases its place when it ends, whatever ends it. A place
 * whose release was lost (a crash) is reclaimed once it is older than the
 * maximum session age, which no session outlives.
 *
 * Cost: one request at initialize and one at session end; nothing per call.
 */
export class KeySessionsDO extends DurableObject<Env> {
	private readonly sql: SqlStorage;

	constructor(ctx: DurableObjectState, env: Env) {
		super(ctx, env);
		this.sql = ctx.storage.sql;
		this.sql.exec("CREATE TABLE IF NOT EXISTS sessions (session TEXT PRIMARY KEY, opened_at INTEGER NOT NULL)");
	}

	/** Takes a place for `session` if the key holds fewer than `max` live sessions. */
	admit(session: string, max: number): boolean {
		const now = Date.now();
		this.sql.exec("DELETE FROM sessions WHERE opened_at < ?", now - settingsFrom(this.env).maxSessionAgeMs);
		const row = this.sql.exec<{ live: number }>("SELECT COUNT(*) AS live FROM sessions").one();
		if (row.live >= max) return false;
		this.sql.exec("INSERT OR REPLACE INTO sessions (session, opened_at) VALUES (?, ?)", session, now);
		return true;
	}

	/** Gives the place back (the session ended, or never opened). */
	release(session: string): void {
		this.sql.exec("DELETE FROM sessions WHERE session = ?", session);
	}

	/** The places held: the SessionDO ids of the live sessions (to tell them of a person's new connection). */
	places(): string[] {
		return this.sql
			.exec<{ session: string }>("SELECT session FROM sessions ORDER BY opened_at")
			.toArray()
			.map((row) => row.session);
	}

	/** Live sessions held (tests, operators). */
	live(): number {
		return this.sql.exec<{ live: number }>("SELECT COUNT(*) AS live FROM sessions").one().live;
	}
}

/** The ledger of the live sessions that count against a key's (or principal's) cap: one per key, or per person under a rule. */
export function keySessions(env: Env, keyId: string): DurableObjectStub<KeySessionsDO> {
	return ledgerOf(env, limitHolderOf(keyId));
}

/** The ledger of a limit holder (`limitHolderOf`, `personLimitHolder`). */
export function ledgerOf(env: Env, holder: string): DurableObjectStub<KeySessionsDO> {
	return env.KEY_SESSIONS.get(env.KEY_SESSIONS.idFromName(holder));
}

/** 429 `session_limit`: the key, or the person (all their clients together), holds `cap` live sessions already. */
export function sessionLimitReached(
	keyId: string,
	cap: number,
	options: { hint?: string } & GatewayErrorOptions = {},
): GatewayError {
	const { hint = "", ...rest } = options;
	const who = parsePrincipalId(keyId)
		? `you already hold your limit of ${cap} live sessions, counted over every client you signed in with`
		: `this API key already holds its limit of ${cap} live sessions`;
	return new GatewayError("session_limit", `Too Many Requests: ${who}.${hint}`, rest);
}

/** A key's ledger of live sessions, as a session's opener uses it (the KeySessionsDO's stub). */
export interface SessionLedger {
	admit(place: string, cap: number): Promise<boolean>;
	release(place: string): Promise<unknown>;
}

/** A new session's claim to a place in its key's ledger. */
export interface Admission {
	ledger: SessionLedger;
	/** The session object's id: its place in the ledger. */
	place: string;
	keyId: string;
	cap: number;
	/** What the `session_limit` refusal carries besides its sentence: a hint, headers, the request's id. */
	refusal?: { hint?: string } & GatewayErrorOptions;
}

/**
 * Opens a session within its key's cap of live sessions (or its person's,
 * over all their clients): the ledger admits the session's place first, else
 * the `session_limit` refusal (429) is returned without opening anything;
 * then `open` runs, and a session that does not open, or whose opening
 * throws, gives its place back at once.
 */
export async function openAdmitted<T>(
	admission: Admission,
	open: () => Promise<{ opened: boolean; result: T }>,
): Promise<T | GatewayError> {
	const { ledger, place, keyId, cap } = admission;
	if (!(await ledger.admit(place, cap))) return sessionLimitReached(keyId, cap, admission.refusal);
	let opened = false;
	try {
		const outcome = await open();
		opened = outcome.opened;
		return outcome.result;
	} finally {
		if (!opened) await ledger.release(place);
	}
}
