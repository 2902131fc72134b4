import { type Settings, settingsFrom } from "../config.ts";
import type { CredentialCaller } from "../credentials/credentials-for.ts";
import type { Env } from "../env.ts";
import { type Clock, systemClock, systemTimers, type Timers } from "../primitives/clock.ts";
import { type CountingReader, kvRegistryReader } from "../registry/registry-reader.ts";
import { holdsTasksFor } from "./2025-11-25/task-wire.ts";
import type { Calling, SessionBinding, SessionScope } from "./binding.ts";
import { type RegistryClient, registryClient } from "./registry-client.ts";

/**
 * What every part of a session reads: the binding as the object holds it
 * now, the clock, timers and registry (swapped on the SessionDO in tests, so
 * for every part at once), the settings, and the object's own place, storage
 * and background. One object, shared by the parts, in place of a callback
 * per value.
 */
export class SessionState {
	/** undefined: not loaded yet; null: no session here (never opened, expired or deleted). */
	binding: SessionBinding | null | undefined = undefined;
	clock: Clock = systemClock;
	timers: Timers = systemTimers;
	registry: RegistryClient;
	/**
	 * The session's one reader of the registry's published records: rechecks,
	 * policies and pins read through it, so its count is all the KV reads the
	 * session made.
	 */
	readonly reader: CountingReader;
	readonly settings: Settings;
	/** The Durable Object's id: task ids and the key's ledger name the object by it. */
	readonly place: string;
	/** Who the latest request was for: members' credentials are made for them (see `caller`). */
	private calling: Calling | null = null;

	constructor(
		private readonly ctx: DurableObjectState,
		readonly env: Env,
	) {
		this.settings = settingsFrom(env);
		this.reader = kvRegistryReader(env.REGISTRY_KV, this.settings.kvCacheTtlSeconds);
		this.registry = registryClient(env, this.reader);
		this.place = ctx.id.toString();
	}

	get storage(): DurableObjectStorage {
		return this.ctx.storage;
	}

	/** Keeps the object alive until `promise` settles (work after a reply, closing upstream sessions). */
	waitUntil(promise: Promise<unknown>): void {
		this.ctx.waitUntil(promise);
	}

	/** Whether the session serves an aggregate endpoint (false until one is loaded). */
	get aggregate(): boolean {
		return this.binding?.mode === "aggregate";
	}

	/** Whether the session's client declared task support, so the session holds tasks for it (2025-11-25 wire). */
	holdsTasks(): boolean {
		return holdsTasksFor(this.binding?.clientCapabilities);
	}

	/** Priming events (an id and no data) came with the 2025-11-25 transport; older clients may not expect them. */
	primesStreams(): boolean {
		const version = this.binding?.protocolVersion;
		return version !== undefined && version >= "2025-11-25";
	}

	/** A request of the session's own principal says who calls now (its exchangeable token, if any). */
	noteCaller(scope: SessionScope): void {
		if (scope.calling) this.calling = scope.calling;
	}

	/**
	 * Who members' requests are made for: the latest request's caller, or the
	 * one the binding keeps (after an eviction, for work no request started).
	 * Both are the session's one principal: a session is bound to it.
	 */
	caller(): CredentialCaller | null {
		if (this.calling) return this.calling;
		const stored = this.binding?.caller;
		return stored ? { ...stored, subjectToken: null } : null;
	}
}
