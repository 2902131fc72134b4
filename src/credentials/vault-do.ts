import { DurableObject } from "cloudflare:workers";
import { z } from "zod";
import type { Env } from "../env.ts";
import { sha256Hex } from "../primitives/crypto.ts";
import { ServerNameSchema } from "../registry/schemas.ts";
import { CONNECT_LIFETIME_MS, type ConnectFlow, ConnectFlowSchema } from "./connect-flow.ts";
import { oauthTokenClient } from "./oauth-tokens.ts";
import {
	type OAuthClient,
	OAuthClientSchema,
	RefreshRefused,
	type StoredConnection,
	StoredConnectionSchema,
	type TokenClient,
	TokenSetSchema,
} from "./stored-connection.ts";
import {
	type Sealed,
	SealUnopenable,
	sealContext,
	VaultSealer,
	type VaultSecrets,
	vaultKeyProblem,
	vaultSecretsFrom,
} from "./vault-crypto.ts";
import { type ConnectionRow, type ConnectionState, VaultStore } from "./vault-tables.ts";

/** An access token expiring within this is refreshed before it is handed out. */
export const REFRESH_AHEAD_MS = 60_000;
/** A token obtained by a refresh this recently and refused by the upstream: refreshing again will not help. */
export const JUST_REFRESHED_MS = 60_000;
/** Clocks of the edge that signs a link and of this object may differ by this much. */
const CLOCK_SKEW_MS = 60_000;

/** Why the person must connect (again): never did, the authorization server refused a refresh, the upstream refused a fresh token. */
export type ConnectReason = "never" | "disconnected" | "refused";

/** What a caller gets for an upstream request: a token to send, or the need to connect. */
export type TokenAnswer =
	| { kind: "token"; accessToken: string; expiresAt: number | null }
	| { kind: "connect"; reason: ConnectReason };

/** A connection as people and operators see it: no token material. */
export interface ConnectionSummary {
	server: string;
	state: ConnectionState;
	connectedAt: number;
}

export interface VaultClock {
	now(): number;
}

const TokenRequestSchema = z.object({
	server: ServerNameSchema,
	generation: z.string().min(1).max(128),
	/** The access token the upstream just refused (401): the caller asks for another. */
	refusedToken: z.string().min(1).optional(),
});
export type TokenRequest = z.input<typeof TokenRequestSchema>;

/** Link nonces and flow states are random values of the gateway's: short ones are not. */
const SecretHandleSchema = z.string().min(16).max(512);
const ExpirySchema = z.number().int().nonnegative();

/** A connection as this object holds it in memory: the row's clear columns, and the opened connection (null once disconnected). */
interface Held {
	server: string;
	generation: string;
	connectedAt: number;
	connection: StoredConnection | null;
}

/**
 * One person's (or one API key's) upstream credentials: a Durable Object per
 * vault name (`person:<userId>`, `key:<keyId>`; see caller.ts), and one per
 * server's OAuth client registration (`client:<server>:<generation>`).
 * Everything secret is stored sealed (vault-crypto.ts), and leaves only in
 * the answer to `token`, for the request to that person's upstream.
 *
 * Refreshes happen here, single-flight: callers that need one while it runs
 * share it. The rotated refresh token is stored before the new access token
 * is handed out, and the old one stays stored until then, so an object
 * evicted mid-refresh starts again from storage with nothing lost.
 *
 * Cost: a connection is read from storage once per object lifetime and kept
 * opened in memory; storage is written only when it changes (connect,
 * refresh, disconnect). A fresh token costs no storage operation after the
 * first.
 */
export class TokenVaultDO extends DurableObject<Env> {
	readonly store: VaultStore;
	/** Refreshes and revocations at the upstreams' token endpoints; the lead sets the real one. */
	tokenClient: TokenClient = oauthTokenClient;
	clock: VaultClock = { now: () => Date.now() };
	/** Refreshes started, and callers that shared one under way (tests, benchmarks). */
	readonly refreshStats = { started: 0, joined: 0 };
	/** The vault's keys; tests swap them to rotate. */
	secrets: VaultSecrets;

	/** Connections opened so far, by server; null: known to be absent. */
	private readonly held = new Map<string, Held | null>();
	/** The refresh under way per server, shared by every caller that needs it. */
	private readonly refreshes = new Map<string, Promise<TokenAnswer>>();
	/** Counts every change of the connections, so a load that raced one reads again instead of caching what it read before. */
	private changes = 0;
	private client: OAuthClient | null | undefined;

	constructor(ctx: DurableObjectState, env: Env) {
		super(ctx, env);
		this.store = new VaultStore(ctx.storage.sql);
		this.secrets = vaultSecretsFrom(env);
	}

	/**
	 * A token for an upstream request to `server`, refreshed first when it
	 * expires within a minute or when the upstream just refused
	 * `refusedToken`; otherwise why the person must connect. Throws when a
	 * refresh fails for another reason than `invalid_grant` (the tokens are
	 * kept), and `VaultKeyMisconfigured` without a usable TOKEN_VAULT_KEY.
	 */
	async token(request: TokenRequest): Promise<TokenAnswer> {
		const { server, generation, refusedToken } = TokenRequestSchema.parse(request);
		this.vaultName();
		// Refused up front, even with nothing stored: the operator learns of the setting at the first use.
		const problem = vaultKeyProblem(this.secrets);
		if (problem) throw problem;
		const held = await this.connectionOf(server);
		if (!held) return connect("never");
		if (held.generation !== generation) {
			// Made for an earlier incarnation of the server: of no use to this one.
			this.forget(server);
			if (held.connection) this.revokeLater(held.connection);
			return connect("never");
		}
		const current = held.connection;
		if (!current) return connect("disconnected");
		if (refusedToken !== undefined) {
			// Someone refreshed meanwhile: the refused token is not the one we hold.
			if (refusedToken !== current.tokens.accessToken) return tokenOf(current);
			if (current.refreshedAt !== null && this.clock.now() - current.refreshedAt < JUST_REFRESHED_MS)
				return connect("refused");
		} else if (!this.expiresSoon(current)) {
			return tokenOf(current);
		}
		return this.refreshOnce(held, refusedToken !== undefined ? "refused" : "expiring");
	}

	/**
	 * Stores a connection just made (sealed), replacing any earlier one of that
	 * server. (Not named `connect`: that is the Durable Object's socket handler.)
	 */
	async saveConnection(connection: StoredConnection): Promise<void> {
		const parsed = StoredConnectionSchema.parse(connection);
		const sealed = await this.sealConnection(parsed);
		this.changes++;
		const held: Held = {
			server: parsed.server,
			generation: parsed.generation,
			connectedAt: parsed.connectedAt,
			connection: parsed,
		};
		this.store.putConnection(rowOf(held, sealed));
		this.held.set(parsed.server, held);
	}

	/**
	 * Deletes the person's connection to `server`, then revokes its tokens at
	 * the upstream (RFC 7009, best effort, not waited for: the deletion does
	 * not depend on the upstream). Returns whether there was one.
	 */
	async disconnect(server: string): Promise<boolean> {
		const name = ServerNameSchema.parse(server);
		const vault = this.vaultName();
		const known = this.held.get(name);
		this.changes++;
		const row = this.store.deleteConnection(name);
		this.held.set(name, null);
		if (known?.connection) this.revokeLater(known.connection);
		else if (row?.sealed) this.revokeSealedLater(vault, row.server, row.sealed);
		return row !== null;
	}

	/** Deletes every connection of the vault and the flows under way (a person cut off); revokes the tokens best effort. Returns how many connections there were. */
	async disconnectAll(): Promise<number> {
		const vault = this.vaultName();
		const known = new Map(this.held);
		this.changes++;
		const rows = this.store.deleteConnections();
		this.store.deleteFlows();
		this.held.clear();
		for (const row of rows) {
			const opened = known.get(row.server)?.connection;
			if (opened) this.revokeLater(opened);
			else if (row.sealed) this.revokeSealedLater(vault, row.server, row.sealed);
		}
		return rows.length;
	}

	/** The vault's connections, as the person and operators may see them. */
	async connections(): Promise<ConnectionSummary[]> {
		this.vaultName();
		return this.store.connections().map(({ server, state, connectedAt }) => ({ server, state, connectedAt }));
	}

	/** True the first time a connect link's nonce is used before `expiresAt`; false after, and for an expired or over-long link. */
	async useLink(nonce: string, expiresAt: number): Promise<boolean> {
		const handle = SecretHandleSchema.parse(nonce);
		const expiry = ExpirySchema.parse(expiresAt);
		this.vaultName();
		const now = this.clock.now();
		this.store.sweep(now);
		if (expiry <= now || expiry > now + CONNECT_LIFETIME_MS + CLOCK_SKEW_MS) return false;
		return this.store.useLink(await sha256Hex(handle), expiry);
	}

	/** Keeps an authorization flow (sealed) under its `state` for 10 minutes from its creation. */
	async beginFlow(state: string, flow: ConnectFlow): Promise<void> {
		const handle = SecretHandleSchema.parse(state);
		const parsed = ConnectFlowSchema.parse(flow);
		const vault = this.vaultName();
		const now = this.clock.now();
		this.store.sweep(now);
		const digest = await sha256Hex(handle);
		const sealed = await (await this.sealer()).seal(JSON.stringify(parsed), sealContext(vault, "flows", digest));
		const expiresAt = Math.min(parsed.createdAt, now) + CONNECT_LIFETIME_MS;
		if (!this.store.putFlow(digest, expiresAt, sealed))
			throw new Error("token vault: a flow of this state exists already");
	}

	/** The flow of `state`, once: null after it was taken, after it expired, or for a state never begun. */
	async takeFlow(state: string): Promise<ConnectFlow | null> {
		const handle = SecretHandleSchema.parse(state);
		const vault = this.vaultName();
		const now = this.clock.now();
		const digest = await sha256Hex(handle);
		const row = this.store.takeFlow(digest);
		this.store.sweep(now);
		if (!row || row.expiresAt <= now) return null;
		const plaintext = await this.openOrNull(row.sealed, sealContext(vault, "flows", digest));
		return plaintext === null ? null : parsedJson(ConnectFlowSchema, plaintext, "flow");
	}

	/** The OAuth client registered for this object's server (an object named `client:<server>:<generation>`), or null. */
	async registeredClient(): Promise<OAuthClient | null> {
		const name = this.clientName();
		if (this.client !== undefined) return this.client;
		const sealed = this.store.registeredClient();
		const plaintext =
			sealed === null ? null : await this.openOrNull(sealed, sealContext(name, "registered_client", "1"));
		const client = plaintext === null ? null : parsedJson(OAuthClientSchema, plaintext, "registered client");
		this.client = client;
		return client;
	}

	async saveRegisteredClient(client: OAuthClient): Promise<void> {
		const parsed = OAuthClientSchema.parse(client);
		const name = this.clientName();
		const sealed = await (await this.sealer()).seal(
			JSON.stringify(parsed),
			sealContext(name, "registered_client", "1"),
		);
		this.store.putRegisteredClient(sealed, this.clock.now());
		this.client = parsed;
	}

	/** Forgets the registration (the authorization server refused it); returns whether there was one. */
	async dropRegisteredClient(): Promise<boolean> {
		this.clientName();
		this.client = null;
		return this.store.deleteRegisteredClient();
	}

	private expiresSoon(connection: StoredConnection): boolean {
		const { expiresAt } = connection.tokens;
		return expiresAt !== null && expiresAt - this.clock.now() <= REFRESH_AHEAD_MS;
	}

	/** The refresh of `held`'s server: the one under way, or a new one that every later caller shares until it ends. */
	private refreshOnce(held: Held, cause: "expiring" | "refused"): Promise<TokenAnswer> {
		const under = this.refreshes.get(held.server);
		if (under) {
			this.refreshStats.joined++;
			return under;
		}
		this.refreshStats.started++;
		const refresh = this.refresh(held, cause).finally(() => this.refreshes.delete(held.server));
		this.refreshes.set(held.server, refresh);
		return refresh;
	}

	private async refresh(held: Held, cause: "expiring" | "refused"): Promise<TokenAnswer> {
		const connection = held.connection;
		if (!connection) return connect("disconnected");
		if (connection.tokens.refreshToken === null) {
			const { expiresAt } = connection.tokens;
			// Nothing to refresh with: the token serves while it is valid, then the person connects again.
			if (cause === "expiring" && expiresAt !== null && expiresAt > this.clock.now()) return tokenOf(connection);
			this.markDisconnected(held);
			return connect(cause === "refused" ? "refused" : "disconnected");
		}
		let tokens: z.infer<typeof TokenSetSchema>;
		try {
			tokens = TokenSetSchema.parse(await this.tokenClient.refresh(connection, this.env));
		} catch (error) {
			if (!(error instanceof RefreshRefused)) throw error;
			// The grant is gone for good (invalid_grant): the tokens are deleted, the row says so.
			if (this.held.get(held.server) === held) this.markDisconnected(held);
			return this.answerNow(held);
		}
		const next: StoredConnection = {
			...connection,
			// An authorization server that does not rotate refresh tokens keeps the one it issued valid.
			tokens: { ...tokens, refreshToken: tokens.refreshToken ?? connection.tokens.refreshToken },
			refreshedAt: this.clock.now(),
		};
		const sealed = await this.sealConnection(next);
		// Disconnected or connected anew while the token endpoint answered: what it gave is not kept.
		if (this.held.get(held.server) !== held) return this.answerNow(held);
		const refreshed: Held = { ...held, connection: next };
		this.changes++;
		// Stored before it is returned: the rotated refresh token is never only in memory.
		this.store.putConnection(rowOf(refreshed, sealed));
		this.held.set(held.server, refreshed);
		return tokenOf(next);
	}

	/** The answer from what the vault holds now for `held`'s server (after it changed under a refresh). */
	private async answerNow(held: Held): Promise<TokenAnswer> {
		const now = await this.connectionOf(held.server);
		if (!now || now.generation !== held.generation) return connect("never");
		return now.connection ? tokenOf(now.connection) : connect("disconnected");
	}

	private markDisconnected(held: Held): void {
		const disconnected: Held = { ...held, connection: null };
		this.changes++;
		this.store.putConnection(rowOf(disconnected, null));
		this.held.set(held.server, disconnected);
	}

	private forget(server: string): void {
		this.changes++;
		this.store.deleteConnection(server);
		this.held.set(server, null);
	}

	/** The connection of `server`: from memory, or read from storage and opened once. */
	private async connectionOf(server: string): Promise<Held | null> {
		for (;;) {
			const known = this.held.get(server);
			if (known !== undefined) return known;
			const changes = this.changes;
			const row = this.store.connection(server);
			const held = row === null ? null : await this.opened(row);
			// Changed while the row was opened: what was read may be stale, read again.
			if (this.changes !== changes) continue;
			const raced = this.held.get(server);
			if (raced !== undefined) return raced;
			// An unreadable row is not kept as absent: a key put back (TOKEN_VAULT_KEY_PREVIOUS) opens it.
			if (held === undefined) return null;
			this.held.set(server, held);
			return held;
		}
	}

	/** A row opened; undefined when its sealed value does not open. */
	private async opened(row: ConnectionRow): Promise<Held | undefined> {
		const base = { server: row.server, generation: row.generation, connectedAt: row.connectedAt };
		if (row.state === "disconnected" || row.sealed === null) return { ...base, connection: null };
		const plaintext = await this.openOrNull(row.sealed, sealContext(this.vaultName(), "connections", row.server));
		const connection = plaintext === null ? null : parsedJson(StoredConnectionSchema, plaintext, "connection");
		if (connection === null || connection.server !== row.server) return undefined;
		return { ...base, connection };
	}

	private async sealConnection(connection: StoredConnection): Promise<Sealed> {
		const context = sealContext(this.vaultName(), "connections", connection.server);
		return (await this.sealer()).seal(JSON.stringify(connection), context);
	}

	/** The plaintext of a sealed value, or null (logged) when it does not open. */
	private async openOrNull(sealed: Sealed, context: string): Promise<string | null> {
		try {
			return await (await this.sealer()).open(sealed, context);
		} catch (error) {
			if (!(error instanceof SealUnopenable)) throw error;
			console.error(`token vault: ${error.message}; treated as absent`);
			return null;
		}
	}

	private sealer(): Promise<VaultSealer> {
		return VaultSealer.of(this.secrets);
	}

	/** Revokes a connection's tokens at the upstream after the answer, best effort. */
	private revokeLater(connection: StoredConnection): void {
		this.ctx.waitUntil(
			this.tokenClient.revoke(connection, this.env).catch((error: unknown) => {
				console.error(`token vault: revoking the tokens of ${connection.server} failed: ${describe(error)}`);
			}),
		);
	}

	private revokeSealedLater(vault: string, server: string, sealed: Sealed): void {
		const revoke = async () => {
			const plaintext = await this.openOrNull(sealed, sealContext(vault, "connections", server));
			const connection = plaintext === null ? null : parsedJson(StoredConnectionSchema, plaintext, "connection");
			if (connection) await this.tokenClient.revoke(connection, this.env);
		};
		this.ctx.waitUntil(
			revoke().catch((error: unknown) => {
				console.error(`token vault: revoking the tokens of ${server} failed: ${describe(error)}`);
			}),
		);
	}

	/** This object's name when it is a person's or a key's vault; throws for any other object. */
	private vaultName(): string {
		const name = this.ctx.id.name;
		if (name === undefined || !/^(person|key):./.test(name))
			throw new Error("token vault: this object is not a vault (person:<id> or key:<id>)");
		return name;
	}

	/** This object's name when it keeps a server's client registration; throws for any other object. */
	private clientName(): string {
		const name = this.ctx.id.name;
		if (name === undefined || !/^client:[^:]+:./.test(name))
			throw new Error("token vault: this object keeps no client registration (client:<server>:<generation>)");
		return name;
	}
}

function connect(reason: ConnectReason): TokenAnswer {
	return { kind: "connect", reason };
}

function tokenOf(connection: StoredConnection): TokenAnswer {
	return { kind: "token", accessToken: connection.tokens.accessToken, expiresAt: connection.tokens.expiresAt };
}

function rowOf(held: Held, sealed: Sealed | null): ConnectionRow {
	return {
		server: held.server,
		generation: held.generation,
		state: held.connection ? "connected" : "disconnected",
		connectedAt: held.connectedAt,
		sealed: held.connection ? sealed : null,
	};
}

/** JSON opened from the vault, parsed; null (logged) when it is not what this code writes. */
function parsedJson<T>(schema: z.ZodType<T>, text: string, what: string): T | null {
	let value: unknown;
	try {
		value = JSON.parse(text);
	} catch (error) {
		if (!(error instanceof SyntaxError)) throw error;
		console.error(`token vault: a sealed ${what} is not JSON`);
		return null;
	}
	const parsed = schema.safeParse(value);
	if (parsed.success) return parsed.data;
	console.error(`token vault: a sealed ${what} is unreadable: ${parsed.error.issues[0]?.message}`);
	return null;
}

function describe(error: unknown): string {
	return error instanceof Error ? error.message : String(error);
}

/** The vault object of a name (`person:<userId>`, `key:<keyId>`, `client:<server>:<generation>`). */
export function vaultObject(env: Env, name: string): DurableObjectStub<TokenVaultDO> {
	return env.VAULTS.get(env.VAULTS.idFromName(name));
}
