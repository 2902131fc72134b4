import { env, evictDurableObject, runInDurableObject } from "cloudflare:test";
import { describe, expect, it, onTestFinished } from "vitest";
import type { ConnectFlow } from "../src/credentials/connect-flow.ts";
import {
	type OAuthClient,
	RefreshRefused,
	type StoredConnection,
	type TokenClient,
	type TokenSet,
} from "../src/credentials/stored-connection.ts";
import {
	VaultKeyMisconfigured,
	VaultSealer,
	type VaultSecrets,
	vaultKeyProblem,
} from "../src/credentials/vault-crypto.ts";
import { type TokenVaultDO, vaultObject } from "../src/credentials/vault-do.ts";
import { randomToken, sha256Hex } from "../src/primitives/crypto.ts";
import { eventually } from "./support/eventually.ts";
import { uniqueName } from "./support/gateway.ts";
import { ManualClock } from "./support/session-object.ts";

/** Fixture secrets of the vault's key (vitest.config.ts binds the first as TOKEN_VAULT_KEY). */
const KEY_A = "test-vault-key-0123456789abcdefghijkl";
const KEY_B = "rotated-vault-key-9876543210zyxwvutsrq";
const GENERATION = "gen-1";
const HOUR = 3_600_000;

/** A secret-looking string no test writes twice: what must never be found in storage in clear. */
function secret(kind: string): string {
	return `${kind}-${randomToken(18)}`;
}

/**
 * A token endpoint in the vault's hands: counts refreshes and revocations
 * (with what each was given), answers as the test says, and can hold either
 * until released, to pin down what happens while one is under way.
 */
class TestTokenClient implements TokenClient {
	readonly refreshes: StoredConnection[] = [];
	readonly revocations: StoredConnection[] = [];
	/** What each refresh answers: new tokens, `invalid_grant`, or a network failure. */
	outcome: "rotate" | "invalid_grant" | "unreachable" = "rotate";
	readonly issued: TokenSet[] = [];
	private refreshGate = new Gate();
	private revokeGate = new Gate();

	constructor(private readonly clock: ManualClock) {
		onTestFinished(() => {
			this.refreshGate.open();
			this.revokeGate.open();
		});
	}

	holdRefreshes(): void {
		this.refreshGate.close();
	}
	releaseRefreshes(): void {
		this.refreshGate.open();
	}
	holdRevocations(): void {
		this.revokeGate.close();
	}
	releaseRevocations(): void {
		this.revokeGate.open();
	}

	async refresh(connection: StoredConnection): Promise<TokenSet> {
		this.refreshes.push(structuredClone(connection));
		await this.refreshGate.passed();
		if (this.outcome === "invalid_grant") throw new RefreshRefused("invalid_grant (test)");
		if (this.outcome === "unreachable") throw new Error("token endpoint unreachable (test)");
		const tokens: TokenSet = {
			accessToken: secret("access"),
			refreshToken: secret("refresh"),
			expiresAt: this.clock.now() + HOUR,
			scopes: ["read"],
		};
		this.issued.push(tokens);
		return tokens;
	}

	async revoke(connection: StoredConnection): Promise<void> {
		this.revocations.push(structuredClone(connection));
		await this.revokeGate.passed();
	}
}

/** A gate calls wait at while it is closed. */
class Gate {
	private waiting: Promise<void> | null = null;
	private release: (() => void) | null = null;
	close(): void {
		this.waiting = new Promise((resolve) => {
			this.release = resolve;
		});
	}
	open(): void {
		this.release?.();
		this.waiting = null;
	}
	async passed(): Promise<void> {
		if (this.waiting) await this.waiting;
	}
}

interface Vault {
	name: string;
	stub: DurableObjectStub<TokenVaultDO>;
	clock: ManualClock;
	client: TestTokenClient;
	/** Puts the test's clock and token client (and optionally keys) into the object, as after every eviction. */
	instrument(secrets?: VaultSecrets, client?: TestTokenClient): Promise<void>;
}

async function openVault(name = `person:${uniqueName("user")}`): Promise<Vault> {
	const stub = vaultObject(env, name);
	const clock = new ManualClock(Date.now());
	const vault: Vault = {
		name,
		stub,
		clock,
		client: new TestTokenClient(clock),
		instrument: async (secrets, client) => {
			if (client) vault.client = client;
			const tokenClient = vault.client;
			await runInDurableObject(vault.stub, (instance: TokenVaultDO) => {
				instance.clock = clock;
				instance.tokenClient = tokenClient;
				if (secrets) instance.secrets = secrets;
			});
		},
	};
	await vault.instrument();
	return vault;
}

/** A person's connection to `server` as the connect flow stores it, with fresh token strings. */
function connectionTo(server: string, clock: ManualClock, tokens: Partial<TokenSet> = {}): StoredConnection {
	return {
		server,
		generation: GENERATION,
		issuer: "https://as.example",
		tokenEndpoint: "https://as.example/token",
		revocationEndpoint: "https://as.example/revoke",
		client: {
			clientId: "client-1",
			clientSecret: secret("dcr-secret"),
			secretReference: null,
			authMethod: "client_secret_basic",
		},
		resource: "https://mcp.example/mcp",
		tokens: {
			accessToken: secret("access"),
			refreshToken: secret("refresh"),
			expiresAt: clock.now() + HOUR,
			scopes: ["read"],
			...tokens,
		},
		connectedAt: clock.now(),
		refreshedAt: null,
	};
}

/** Every row of every table of the object's storage (and its key-value entries), as text. */
function storedText(stub: DurableObjectStub<TokenVaultDO>): Promise<string> {
	return runInDurableObject(stub, async (_instance: TokenVaultDO, state) => {
		const sql = state.storage.sql;
		const tables = sql
			.exec<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table'")
			.toArray()
			.map((row) => row.name)
			// workerd's own tables (the key-value API's among them) are not readable from SQL; `list()` reads that one.
			.filter((name) => !name.startsWith("_cf_") && !name.startsWith("sqlite_"));
		expect(tables).toEqual(expect.arrayContaining(["connections", "links", "flows", "registered_client"]));
		const rows = tables.map((table) => ({ table, rows: sql.exec(`SELECT * FROM "${table}"`).toArray() }));
		return JSON.stringify({ rows, kv: [...(await state.storage.list()).entries()] });
	});
}

/**
 * Runs `call` on the vault instance itself. For calls expected to reject: a rejecting RPC through
 * a stub leaks one unhandled rejection in the test pool whatever the test does with it
 * (cloudflare/workers-sdk#14736), while a rejection inside runInDurableObject does not.
 */
function inVault<R>(stub: DurableObjectStub<TokenVaultDO>, call: (vault: TokenVaultDO) => Promise<R>): Promise<R> {
	return runInDurableObject(stub, (instance: TokenVaultDO) => call(instance));
}

/** The raw connection row of `server`. */
function rawConnection(stub: DurableObjectStub<TokenVaultDO>, server: string) {
	return runInDurableObject(
		stub,
		(_instance: TokenVaultDO, state) =>
			state.storage.sql.exec("SELECT * FROM connections WHERE server = ?", server).toArray()[0],
	);
}

async function keyIdOf(secretText: string): Promise<string> {
	return (await sha256Hex(secretText)).slice(0, 8);
}

function flowFor(server: string, clock: ManualClock): ConnectFlow {
	return {
		server,
		generation: GENERATION,
		principalId: "oauth~rule~g1~user",
		browserBinding: "b".repeat(43),
		codeVerifier: secret("verifier").padEnd(64, "v"),
		redirectUri: "https://gateway.test/connect/callback",
		elicitationId: "elicit-1",
		issuerMetadata: { issuer: "https://as.example", token_endpoint: "https://as.example/token" },
		createdAt: clock.now(),
	};
}

describe("sealed at rest", () => {
	it("storage holds no token, verifier or client secret in clear, in any row of any table", async () => {
		const { stub, clock } = await openVault();
		const connection = connectionTo("alpha", clock);
		await stub.saveConnection(connection);
		const flow = flowFor("alpha", clock);
		await stub.beginFlow(randomToken(32), flow);
		expect(await stub.useLink(randomToken(32), clock.now() + 60_000)).toBe(true);
		const registration = vaultObject(env, `client:alpha:${GENERATION}`);
		const dcr: OAuthClient = {
			clientId: "dcr-1",
			clientSecret: secret("dcr"),
			secretReference: null,
			authMethod: "client_secret_post",
		};
		await registration.saveRegisteredClient(dcr);

		const stored = await storedText(stub);
		expect(stored).toContain('"server":"alpha"');
		for (const text of [
			connection.tokens.accessToken,
			connection.tokens.refreshToken ?? "",
			connection.client.clientSecret ?? "",
			flow.codeVerifier,
		])
			expect(stored).not.toContain(text);
		expect(await storedText(registration)).not.toContain(dcr.clientSecret);
	});

	it("connections() lists server, state and since when, and no token material", async () => {
		const { stub, clock } = await openVault();
		const connection = connectionTo("alpha", clock);
		await stub.saveConnection(connection);
		const listed = await stub.connections();
		expect(listed).toEqual([{ server: "alpha", state: "connected", connectedAt: connection.connectedAt }]);
		expect(JSON.stringify(listed)).not.toContain(connection.tokens.accessToken);
	});

	it("a value sealed under the previous key opens with it as TOKEN_VAULT_KEY_PREVIOUS, and is sealed under the new key at its next write", async () => {
		const vault = await openVault();
		const { stub, clock } = vault;
		const connection = connectionTo("alpha", clock);
		await stub.saveConnection(connection);
		expect((await rawConnection(stub, "alpha"))?.key_id).toBe(await keyIdOf(KEY_A));

		// Rotated without the old key: the value does not open, the person would connect again.
		await evictDurableObject(stub);
		await vault.instrument({ current: KEY_B, previous: undefined });
		expect(await stub.token({ server: "alpha", generation: GENERATION })).toEqual({ kind: "connect", reason: "never" });

		await evictDurableObject(stub);
		await vault.instrument({ current: KEY_B, previous: KEY_A });
		expect(await stub.token({ server: "alpha", generation: GENERATION })).toEqual({
			kind: "token",
			accessToken: connection.tokens.accessToken,
			expiresAt: connection.tokens.expiresAt,
		});
		// Reading does not write: still under the old key until the value changes.
		expect((await rawConnection(stub, "alpha"))?.key_id).toBe(await keyIdOf(KEY_A));

		clock.advance(HOUR);
		const refreshed = await stub.token({ server: "alpha", generation: GENERATION });
		expect(refreshed).toMatchObject({ kind: "token", accessToken: vault.client.issued[0]?.accessToken });
		expect((await rawConnection(stub, "alpha"))?.key_id).toBe(await keyIdOf(KEY_B));

		// The old key can go now.
		await evictDurableObject(stub);
		await vault.instrument({ current: KEY_B, previous: undefined });
		expect(await stub.token({ server: "alpha", generation: GENERATION })).toEqual(refreshed);
	});

	it("a sealed row copied into another person's vault, or to another server's row, does not open", async () => {
		const alice = await openVault();
		const bob = await openVault();
		await alice.stub.saveConnection(connectionTo("alpha", alice.clock));
		const row = await rawConnection(alice.stub, "alpha");
		expect(row).toBeDefined();
		const copy = (stub: DurableObjectStub<TokenVaultDO>, server: string) =>
			runInDurableObject(stub, (_instance: TokenVaultDO, state) => {
				state.storage.sql.exec(
					"INSERT INTO connections (server, generation, state, connected_at, key_id, box) VALUES (?, ?, ?, ?, ?, ?)",
					server,
					row?.generation ?? null,
					row?.state ?? null,
					row?.connected_at ?? null,
					row?.key_id ?? null,
					row?.box ?? null,
				);
			});
		await copy(bob.stub, "alpha");
		await copy(alice.stub, "beta");
		expect(await bob.stub.token({ server: "alpha", generation: GENERATION })).toEqual({
			kind: "connect",
			reason: "never",
		});
		expect(await alice.stub.token({ server: "beta", generation: GENERATION })).toEqual({
			kind: "connect",
			reason: "never",
		});
		expect(bob.client.refreshes).toHaveLength(0);
	});
});

describe("tokens and refresh", () => {
	it("a fresh token is read from storage once, then from memory: no storage operation per call", async () => {
		const vault = await openVault();
		const { stub, clock } = vault;
		const connection = connectionTo("alpha", clock);
		await stub.saveConnection(connection);
		await evictDurableObject(stub);
		await vault.instrument();
		for (let call = 0; call < 10; call++)
			expect(await stub.token({ server: "alpha", generation: GENERATION })).toMatchObject({
				accessToken: connection.tokens.accessToken,
			});
		const costs = await runInDurableObject(stub, (instance: TokenVaultDO) => ({
			reads: instance.store.reads,
			writes: instance.store.writes,
		}));
		expect(costs).toEqual({ reads: 1, writes: 0 });
		expect(vault.client.refreshes).toHaveLength(0);
	});

	it("8 concurrent calls with a token expiring within a minute share exactly one refresh, and all get the new token", async () => {
		const { stub, clock, client } = await openVault();
		await stub.saveConnection(connectionTo("alpha", clock, { expiresAt: clock.now() + 30_000 }));
		client.holdRefreshes();
		const calls = Array.from({ length: 8 }, () => stub.token({ server: "alpha", generation: GENERATION }));
		await eventually(
			() => runInDurableObject(stub, (instance: TokenVaultDO) => instance.refreshStats.joined === 7),
			"7 callers waiting on the first one's refresh",
		);
		expect(client.refreshes).toHaveLength(1);
		client.releaseRefreshes();
		const answers = await Promise.all(calls);
		const issued = client.issued[0];
		expect(answers).toEqual(
			Array(8).fill({ kind: "token", accessToken: issued?.accessToken, expiresAt: issued?.expiresAt }),
		);
		expect(client.refreshes).toHaveLength(1);
		expect(await runInDurableObject(stub, (instance: TokenVaultDO) => instance.refreshStats)).toEqual({
			started: 1,
			joined: 7,
		});
	});

	it("the rotated refresh token is in storage by the time the new access token is returned", async () => {
		const vault = await openVault();
		const { stub, clock, client } = vault;
		await stub.saveConnection(connectionTo("alpha", clock, { expiresAt: clock.now() + 10_000 }));
		const answer = await stub.token({ server: "alpha", generation: GENERATION });
		const rotated = client.issued[0];
		expect(answer).toMatchObject({ kind: "token", accessToken: rotated?.accessToken });
		// Nothing of memory survives: what the next refresh presents was read from storage.
		await evictDurableObject(stub);
		await vault.instrument();
		clock.advance(HOUR);
		await stub.token({ server: "alpha", generation: GENERATION });
		expect(client.refreshes.map((given) => given.tokens.refreshToken)).toEqual([
			expect.stringMatching(/^refresh-/),
			rotated?.refreshToken,
		]);
	});

	it("an authorization server that does not rotate the refresh token keeps the one it issued", async () => {
		const { stub, clock } = await openVault();
		const connection = connectionTo("alpha", clock, { expiresAt: clock.now() });
		await stub.saveConnection(connection);
		const client: TokenClient = {
			refresh: async () => ({
				accessToken: secret("access"),
				refreshToken: null,
				expiresAt: clock.now() + HOUR,
				scopes: [],
			}),
			revoke: async () => {},
		};
		await runInDurableObject(stub, (instance: TokenVaultDO) => {
			instance.tokenClient = client;
		});
		await stub.token({ server: "alpha", generation: GENERATION });
		const presented: (string | null)[] = [];
		await runInDurableObject(stub, (instance: TokenVaultDO) => {
			instance.tokenClient = {
				refresh: async (given) => {
					presented.push(given.tokens.refreshToken);
					return { accessToken: secret("access"), refreshToken: null, expiresAt: null, scopes: [] };
				},
				revoke: async () => {},
			};
		});
		clock.advance(HOUR);
		await stub.token({ server: "alpha", generation: GENERATION });
		expect(presented).toEqual([connection.tokens.refreshToken]);
	});

	it("invalid_grant marks the connection disconnected (tokens deleted, row kept) and answers connect/disconnected from then on", async () => {
		const { stub, clock, client } = await openVault();
		const connection = connectionTo("alpha", clock, { expiresAt: clock.now() + 5_000 });
		await stub.saveConnection(connection);
		client.outcome = "invalid_grant";
		expect(await stub.token({ server: "alpha", generation: GENERATION })).toEqual({
			kind: "connect",
			reason: "disconnected",
		});
		expect(await stub.connections()).toEqual([
			{ server: "alpha", state: "disconnected", connectedAt: connection.connectedAt },
		]);
		expect(await rawConnection(stub, "alpha")).toMatchObject({ state: "disconnected", key_id: null, box: null });
		expect(await stub.token({ server: "alpha", generation: GENERATION })).toEqual({
			kind: "connect",
			reason: "disconnected",
		});
		expect(client.refreshes).toHaveLength(1);
	});

	it("a refresh that fails otherwise (network) throws and keeps the tokens: the next call refreshes with the same refresh token", async () => {
		const { stub, clock, client } = await openVault();
		const connection = connectionTo("alpha", clock, { expiresAt: clock.now() + 5_000 });
		await stub.saveConnection(connection);
		client.outcome = "unreachable";
		await expect(inVault(stub, (v) => v.token({ server: "alpha", generation: GENERATION }))).rejects.toThrow(
			/unreachable/,
		);
		client.outcome = "rotate";
		expect(await stub.token({ server: "alpha", generation: GENERATION })).toMatchObject({
			accessToken: client.issued[0]?.accessToken,
		});
		expect(client.refreshes.map((given) => given.tokens.refreshToken)).toEqual([
			connection.tokens.refreshToken,
			connection.tokens.refreshToken,
		]);
	});

	it("a token the upstream refused is refreshed; a stale refusal gets the newer token; a refusal of the token just refreshed answers connect/refused", async () => {
		const { stub, clock, client } = await openVault();
		const connection = connectionTo("alpha", clock);
		await stub.saveConnection(connection);
		const refused = connection.tokens.accessToken;
		const first = await stub.token({ server: "alpha", generation: GENERATION, refusedToken: refused });
		const fresh = client.issued[0]?.accessToken;
		expect(first).toMatchObject({ kind: "token", accessToken: fresh });
		// Another caller that was refused the old token meanwhile: someone refreshed already.
		expect(await stub.token({ server: "alpha", generation: GENERATION, refusedToken: refused })).toMatchObject({
			accessToken: fresh,
		});
		expect(await stub.token({ server: "alpha", generation: GENERATION, refusedToken: fresh })).toEqual({
			kind: "connect",
			reason: "refused",
		});
		expect(client.refreshes).toHaveLength(1);
	});

	it("without a refresh token, a token serves until it expires, then the person connects again; a refused one answers connect/refused", async () => {
		const { stub, clock, client } = await openVault();
		const connection = connectionTo("alpha", clock, { refreshToken: null, expiresAt: clock.now() + 30_000 });
		await stub.saveConnection(connection);
		await stub.saveConnection(connectionTo("beta", clock, { refreshToken: null }));
		expect(await stub.token({ server: "alpha", generation: GENERATION })).toMatchObject({
			accessToken: connection.tokens.accessToken,
		});
		clock.advance(30_000);
		expect(await stub.token({ server: "alpha", generation: GENERATION })).toEqual({
			kind: "connect",
			reason: "disconnected",
		});
		const beta = await stub.token({ server: "beta", generation: GENERATION });
		const refusedToken = beta.kind === "token" ? beta.accessToken : "";
		expect(await stub.token({ server: "beta", generation: GENERATION, refusedToken })).toEqual({
			kind: "connect",
			reason: "refused",
		});
		expect(client.refreshes).toHaveLength(0);
		expect((await stub.connections()).map((listed) => listed.state)).toEqual(["disconnected", "disconnected"]);
	});

	it("a connection made for another generation of the server is deleted and answers connect/never", async () => {
		const { stub, clock, client } = await openVault();
		await stub.saveConnection(connectionTo("alpha", clock));
		expect(await stub.token({ server: "alpha", generation: "gen-2" })).toEqual({ kind: "connect", reason: "never" });
		expect(await stub.connections()).toEqual([]);
		expect(await stub.token({ server: "alpha", generation: GENERATION })).toEqual({ kind: "connect", reason: "never" });
		await eventually(() => client.revocations.length === 1, "the old generation's tokens revoked");
	});

	it("a server never connected answers connect/never", async () => {
		const { stub } = await openVault();
		expect(await stub.token({ server: "alpha", generation: GENERATION })).toEqual({ kind: "connect", reason: "never" });
	});

	it("an object evicted mid-refresh loses nothing: the next one refreshes from storage with the refresh token it had", async () => {
		const vault = await openVault();
		const { stub, clock, client } = vault;
		const connection = connectionTo("alpha", clock, { expiresAt: clock.now() + 5_000 });
		await stub.saveConnection(connection);
		client.holdRefreshes();
		const interrupted = inVault(stub, (instance) => instance.token({ server: "alpha", generation: GENERATION })).then(
			() => "answered",
			() => "rejected",
		);
		await eventually(() => client.refreshes.length === 1, "the refresh under way");
		// Torn down at once, the refresh still at the token endpoint (a graceful eviction would wait for it).
		const aborted = await runInDurableObject(stub, (_instance: TokenVaultDO, state) =>
			state.abort("evicted mid-refresh (test)"),
		).then(
			() => false,
			() => true,
		);
		expect(aborted).toBe(true);
		expect(await interrupted).toBe("rejected");
		// The aborted instance runs nothing more: what it awaited never continues.
		client.releaseRefreshes();

		// A stub of an aborted object stays broken: the next request takes a new one, which starts a new instance.
		vault.stub = vaultObject(env, vault.name);
		const afterwards = new TestTokenClient(clock);
		await vault.instrument(undefined, afterwards);
		expect(await vault.stub.token({ server: "alpha", generation: GENERATION })).toMatchObject({
			kind: "token",
			accessToken: afterwards.issued[0]?.accessToken,
		});
		expect(afterwards.refreshes[0]?.tokens.refreshToken).toBe(connection.tokens.refreshToken);
		expect(client.issued).toHaveLength(0);
	});

	it("a disconnect during a refresh wins: what the token endpoint answered is not stored", async () => {
		const { stub, clock, client } = await openVault();
		await stub.saveConnection(connectionTo("alpha", clock, { expiresAt: clock.now() + 5_000 }));
		client.holdRefreshes();
		const pending = stub.token({ server: "alpha", generation: GENERATION });
		await eventually(() => client.refreshes.length === 1, "the refresh under way");
		expect(await stub.disconnect("alpha")).toBe(true);
		client.releaseRefreshes();
		expect(await pending).toEqual({ kind: "connect", reason: "never" });
		expect(await rawConnection(stub, "alpha")).toBeUndefined();
		expect(await storedText(stub)).not.toContain(client.issued[0]?.accessToken);
	});
});

describe("disconnecting", () => {
	it("disconnect deletes the connection without waiting for the upstream, then revokes its tokens", async () => {
		const { stub, clock, client } = await openVault();
		const connection = connectionTo("alpha", clock);
		await stub.saveConnection(connection);
		client.holdRevocations();
		expect(await stub.disconnect("alpha")).toBe(true);
		// Answered while the revocation is still held at the upstream.
		expect(client.revocations.map((given) => given.tokens.accessToken)).toEqual([connection.tokens.accessToken]);
		expect(await stub.connections()).toEqual([]);
		expect(await stub.token({ server: "alpha", generation: GENERATION })).toEqual({ kind: "connect", reason: "never" });
		expect(await storedText(stub)).not.toContain(connection.tokens.accessToken);
		client.releaseRevocations();
		expect(await stub.disconnect("alpha")).toBe(false);
		expect(client.revocations).toHaveLength(1);
	});

	it("disconnect revokes a connection this object had not opened yet (read sealed from storage)", async () => {
		const vault = await openVault();
		const connection = connectionTo("alpha", vault.clock);
		await vault.stub.saveConnection(connection);
		await evictDurableObject(vault.stub);
		await vault.instrument();
		expect(await vault.stub.disconnect("alpha")).toBe(true);
		await eventually(() => vault.client.revocations.length === 1, "the revocation");
		expect(vault.client.revocations[0]?.tokens.refreshToken).toBe(connection.tokens.refreshToken);
	});

	it("disconnectAll deletes every connection and the flows under way, and revokes each connection's tokens", async () => {
		const { stub, clock, client } = await openVault();
		await stub.saveConnection(connectionTo("alpha", clock));
		await stub.saveConnection(connectionTo("beta", clock));
		const state = randomToken(32);
		await stub.beginFlow(state, flowFor("gamma", clock));
		expect(await stub.disconnectAll()).toBe(2);
		expect(await stub.connections()).toEqual([]);
		expect(await stub.takeFlow(state)).toBeNull();
		await eventually(() => client.revocations.length === 2, "both revocations");
		expect(client.revocations.map((given) => given.server).sort()).toEqual(["alpha", "beta"]);
	});
});

describe("connect links and flows", () => {
	it("a link is usable once, and not after it expired or when it claims more than 10 minutes", async () => {
		const { stub, clock } = await openVault();
		const nonce = randomToken(32);
		const expiresAt = clock.now() + 10 * 60_000;
		expect(await stub.useLink(nonce, expiresAt)).toBe(true);
		expect(await stub.useLink(nonce, expiresAt)).toBe(false);
		expect(await stub.useLink(randomToken(32), clock.now() - 1)).toBe(false);
		expect(await stub.useLink(randomToken(32), clock.now() + 60 * 60_000)).toBe(false);
		const late = randomToken(32);
		clock.advance(10 * 60_000 + 1);
		expect(await stub.useLink(late, expiresAt)).toBe(false);
		expect(await stub.useLink(nonce, expiresAt)).toBe(false);
		// Swept: the expired link's row is gone (it stays refused by its expiry).
		expect(await storedText(stub)).toContain('"table":"links","rows":[]');
	});

	it("a flow is taken once; null after, after 10 minutes, for an unknown state, and in another person's vault", async () => {
		const { stub, clock } = await openVault();
		const other = await openVault();
		const state = randomToken(32);
		const flow = flowFor("alpha", clock);
		await stub.beginFlow(state, flow);
		expect(await other.stub.takeFlow(state)).toBeNull();
		expect(await stub.takeFlow(state)).toEqual(flow);
		expect(await stub.takeFlow(state)).toBeNull();
		expect(await stub.takeFlow(randomToken(32))).toBeNull();

		const expiring = randomToken(32);
		await stub.beginFlow(expiring, flowFor("alpha", clock));
		clock.advance(10 * 60_000);
		expect(await stub.takeFlow(expiring)).toBeNull();
		expect(await storedText(stub)).toContain('"table":"flows","rows":[]');
	});

	it("a flow survives the object's eviction within its 10 minutes", async () => {
		const vault = await openVault();
		const state = randomToken(32);
		const flow = flowFor("alpha", vault.clock);
		await vault.stub.beginFlow(state, flow);
		await evictDurableObject(vault.stub);
		await vault.instrument();
		expect(await vault.stub.takeFlow(state)).toEqual(flow);
	});
});

describe("registered clients", () => {
	it("a server's registered client is kept sealed by its client object, read back after eviction, and dropped", async () => {
		const name = `client:${uniqueName("srv")}:${GENERATION}`;
		const stub = vaultObject(env, name);
		const registered: OAuthClient = {
			clientId: "dcr-client",
			clientSecret: secret("dcr"),
			secretReference: null,
			authMethod: "client_secret_basic",
		};
		expect(await stub.registeredClient()).toBeNull();
		await stub.saveRegisteredClient(registered);
		expect(await stub.registeredClient()).toEqual(registered);
		await evictDurableObject(stub);
		expect(await stub.registeredClient()).toEqual(registered);
		expect(await storedText(stub)).not.toContain(registered.clientSecret);
		expect(await stub.dropRegisteredClient()).toBe(true);
		expect(await stub.registeredClient()).toBeNull();
		expect(await stub.dropRegisteredClient()).toBe(false);
	});

	it("a person's vault keeps no client registration, and a client object holds no one's tokens", async () => {
		const { stub, clock } = await openVault();
		await expect(inVault(stub, (v) => v.registeredClient())).rejects.toThrow(/client registration/);
		const registration = vaultObject(env, `client:alpha:${GENERATION}`);
		await expect(inVault(registration, (v) => v.saveConnection(connectionTo("alpha", clock)))).rejects.toThrow(
			/not a vault/,
		);
	});
});

describe("the vault's key", () => {
	it("a missing or short TOKEN_VAULT_KEY refuses every use with a sentence naming the setting", async () => {
		const vault = await openVault();
		await vault.stub.saveConnection(connectionTo("alpha", vault.clock));
		for (const current of [undefined, "too-short-0123456789"]) {
			await inVault(vault.stub, async (instance) => {
				instance.secrets = { current, previous: undefined };
				await expect(instance.token({ server: "alpha", generation: GENERATION })).rejects.toThrow(
					/TOKEN_VAULT_KEY secret/,
				);
				await expect(instance.saveConnection(connectionTo("beta", vault.clock))).rejects.toThrow(
					/TOKEN_VAULT_KEY secret/,
				);
				await expect(instance.beginFlow(randomToken(32), flowFor("beta", vault.clock))).rejects.toThrow(
					/TOKEN_VAULT_KEY secret/,
				);
			});
		}
	});

	it("the key problem is typed, names its setting, and is found without crypto", async () => {
		await expect(VaultSealer.of({ current: "x".repeat(31), previous: undefined })).rejects.toBeInstanceOf(
			VaultKeyMisconfigured,
		);
		expect(vaultKeyProblem({ current: undefined, previous: undefined })?.setting).toBe("TOKEN_VAULT_KEY");
		const previous = vaultKeyProblem({ current: KEY_A, previous: "short" });
		expect(previous?.setting).toBe("TOKEN_VAULT_KEY_PREVIOUS");
		expect(previous?.message).toMatch(/TOKEN_VAULT_KEY_PREVIOUS/);
		expect(vaultKeyProblem({ current: KEY_A, previous: KEY_B })).toBeNull();
	});

	it("the key id stored beside a value is the first 8 hex digits of the secret's SHA-256", async () => {
		const sealer = await VaultSealer.of({ current: KEY_A, previous: undefined });
		const sealed = await sealer.seal("value", "context");
		expect(sealed.keyId).toBe(await keyIdOf(KEY_A));
		expect(await sealer.open(sealed, "context")).toBe("value");
		await expect(sealer.open(sealed, "another context")).rejects.toThrow(/did not open/);
	});
});
