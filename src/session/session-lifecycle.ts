import { describeError } from "../mcp/gateway-error.ts";
import { withTimeout } from "../primitives/timing.ts";
import type { MemberSessions } from "./aggregate/member-sessions.ts";
import type { SessionBinding } from "./binding.ts";
import type { SessionState } from "./session-state.ts";
import type { SessionStore } from "./session-store.ts";
import type { UpstreamPool } from "./upstream-pool.ts";

/** A registry that does not answer within this is treated as unreadable for this recheck. */
const REGISTRY_TIMEOUT_MS = 5_000;

type RecheckOutcome = "verified" | "unreadable" | "ended";

/** Who ends the session when its lifecycle says it is over (the session: everything of it goes). */
export interface SessionEnder {
	endSession(binding: SessionBinding, reason: string): Promise<void>;
}

/** What else keeps a session and wakes it: its held tasks, until they expire. */
export interface TaskExpiries {
	/** When the next one expires (the alarm sweeps it); Infinity when none. */
	nextExpiry(): number;
	/** When the last one expires: the session is kept until then; 0 when none. */
	lastExpiry(): number;
}

const NO_TASKS: TaskExpiries = { nextExpiry: () => Number.POSITIVE_INFINITY, lastExpiry: () => 0 };

/**
 * When a session ends, and what keeping it alive costs: idle expiry by alarm,
 * at most one storage write per touch interval, at most one registry read per
 * recheck interval (shared by concurrent requests), the unverified limit while
 * the registry cannot be read, the maximum age, and rechecks on a timer while
 * a call runs (invariants "Bounded writes and reads", "Alarm-driven expiry", "Unverified sessions are bounded" and "Revocation reaches open streams and long calls").
 */
export class SessionLifecycle {
	/** Requests running now. */
	inFlight = 0;
	/** Registry reads made, for cost reports. */
	registryReads = 0;
	private lastActivity = 0;
	private persistedActivity = 0;
	/**
	 * Latest activity that may have happened before this instance started and
	 * was never written (at most one touch interval after the stored value), so
	 * an evicted session is never expired early.
	 */
	private restoredActivityBound = 0;
	/** Last successful registry recheck: the unverified limit counts from here. */
	private verifiedAt = 0;
	/** Last recheck attempt, successful or not: registry reads are bounded by the interval from here. */
	private recheckedAt = 0;
	/** The last recheck attempt failed (registry unreadable): activity does not extend the session. */
	private unverified = false;
	private rechecking: Promise<RecheckOutcome> | null = null;
	/** Cancels the recheck timer of a busy session; null while none is set. */
	private cancelBusyRecheck: (() => void) | null = null;
	/** Upstream sessions to close once the calls still running have drained. */
	private closeWhenDrained: SessionBinding | null = null;
	/** The held tasks, once built (they are built on this lifecycle): see `holdsFor`. */
	private tasks: TaskExpiries = NO_TASKS;

	constructor(
		private readonly state: SessionState,
		private readonly store: SessionStore,
		/** Told of members whose configuration a recheck found changed. */
		private readonly members: MemberSessions,
		/** Closes the upstream sessions of an ended session. */
		private readonly pool: UpstreamPool,
		private readonly ender: SessionEnder,
	) {}

	/** The session keeps its held tasks until they expire, and its alarm wakes for each (wired once, at start). */
	holdsFor(tasks: TaskExpiries): void {
		this.tasks = tasks;
	}

	/** A session just opened at `now`: the first alarm is its idle deadline (or its age limit). */
	async opened(binding: SessionBinding): Promise<void> {
		const now = binding.createdAt;
		this.lastActivity = now;
		this.persistedActivity = now;
		this.verifiedAt = now;
		this.recheckedAt = now;
		await this.schedule(Math.min(now + this.state.settings.idleTimeoutMs, this.ageLimitAt(binding)));
	}

	/** A session loaded from storage after the Durable Object started. */
	restored(binding: SessionBinding): void {
		this.lastActivity = binding.lastActivity;
		this.persistedActivity = binding.lastActivity;
		this.restoredActivityBound = binding.lastActivity + this.state.settings.touchIntervalMs;
		this.verifiedAt = binding.verifiedAt;
		this.recheckedAt = binding.verifiedAt;
	}

	/**
	 * The alarm: the maximum age ends the session, busy or not; so does the
	 * unverified limit unless a last recheck succeeds. Otherwise it reschedules
	 * itself while a call runs or activity moved the deadline, and ends an idle session.
	 */
	async alarm(binding: SessionBinding): Promise<void> {
		const { settings } = this.state;
		const now = this.state.clock.now();
		if (now >= this.ageLimitAt(binding)) {
			await this.ender.endSession(binding, "reached its maximum age");
			return;
		}
		if (this.unverified && now >= this.verifiedAt + settings.unverifiedLimitMs) {
			const outcome = await this.recheck(binding);
			if (outcome !== "verified") {
				if (outcome === "unreadable") await this.ender.endSession(binding, "unverified for too long");
				return;
			}
		}
		if (this.inFlight > 0) {
			await this.schedule(Math.min(now + settings.idleTimeoutMs, this.limitAt(), this.ageLimitAt(binding)));
			return;
		}
		const deadline = this.deadline();
		if (now < deadline) {
			await this.schedule(deadline);
			return;
		}
		await this.ender.endSession(binding, "idle");
	}

	/**
	 * When the session ends if nothing else happens: one idle timeout after the
	 * last activity, or when its last held task expires if that is later; while the registry cannot be read, no later than the
	 * unverified limit after the last successful recheck; never after its maximum age.
	 */
	deadline(): number {
		// A task's result is kept for its ttl: the session does not idle out before its last task expires.
		const idle = Math.max(
			Math.max(this.lastActivity, this.restoredActivityBound) + this.state.settings.idleTimeoutMs,
			this.tasks.lastExpiry(),
		);
		const binding = this.state.binding;
		return Math.min(idle, this.limitAt(), binding ? this.ageLimitAt(binding) : Number.POSITIVE_INFINITY);
	}

	/**
	 * Verifies the session with the registry at most once per recheck interval
	 * (invariant "Bounded writes and reads"). The request that finds a recheck due waits for it, so a
	 * revoked or deleted session is refused at once; requests arriving while it
	 * runs are served on the previous verification and do not wait, unless the
	 * unverified limit has passed. A session past its maximum age ends here.
	 * Returns false when the session has ended.
	 */
	async recheckIfDue(binding: SessionBinding): Promise<boolean> {
		const { settings } = this.state;
		const now = this.state.clock.now();
		if (now >= this.ageLimitAt(binding)) {
			await this.ender.endSession(binding, "reached its maximum age");
			return false;
		}
		const pastLimit = now >= this.verifiedAt + settings.unverifiedLimitMs;
		if (this.rechecking && !pastLimit) return this.state.binding !== null;
		if (!this.rechecking && now - this.recheckedAt < settings.recheckIntervalMs && !pastLimit) return true;
		const outcome = await this.recheck(binding);
		if (outcome === "ended") return false;
		if (outcome === "unreadable" && this.state.clock.now() >= this.verifiedAt + settings.unverifiedLimitMs) {
			await this.ender.endSession(binding, "unverified for too long");
			return false;
		}
		return this.state.binding !== null;
	}

	/** Milliseconds until the next recheck is due (or the maximum age): how long a listening window may last. */
	untilRecheck(binding: SessionBinding): number {
		const due = Math.min(this.recheckedAt + this.state.settings.recheckIntervalMs, this.ageLimitAt(binding));
		return due - this.state.clock.now();
	}

	/** Activity that is not a call (a stream opened or closed): moves the idle clock only. */
	touch(): void {
		this.lastActivity = this.state.clock.now();
		this.touchIfDue();
	}

	/** A request starts: it holds idle expiry off until it ends. */
	begin(): void {
		this.inFlight++;
		this.touch();
		this.watchWhileBusy();
	}

	/** A request ended: the idle clock restarts; the last one lets an ended session's upstream sessions close. */
	finish(): void {
		this.inFlight--;
		this.touch();
		this.watchWhileBusy();
		if (this.inFlight === 0 && this.closeWhenDrained) {
			const ended = this.closeWhenDrained;
			this.closeWhenDrained = null;
			this.state.waitUntil(this.pool.closeAll(ended.members, ended.upstreams));
		}
	}

	/** The session ended: its upstream sessions are closed now, or once the calls still running have drained. */
	async closeUpstreams(binding: SessionBinding): Promise<void> {
		if (this.inFlight > 0) this.closeWhenDrained = binding;
		else await this.pool.closeAll(binding.members, binding.upstreams);
	}

	/**
	 * While the session is busy (a call is running), a timer
	 * rechecks it every recheck interval, so a revoked key or a deleted endpoint
	 * ends a long call within one interval even when no new
	 * request arrives. A timer costs no storage write (moving the alarm would
	 * cost one per call), and a busy Durable Object is awake anyway; it is
	 * cancelled as soon as the session is idle, so nothing keeps an idle object awake.
	 */
	watchWhileBusy(): void {
		const binding = this.state.binding;
		const busy = this.inFlight > 0;
		if (!busy || !binding) {
			this.stop();
			return;
		}
		if (this.cancelBusyRecheck) return;
		const due = Math.min(this.recheckedAt + this.state.settings.recheckIntervalMs, this.ageLimitAt(binding));
		this.cancelBusyRecheck = this.state.timers.set(Math.max(0, due - this.state.clock.now()), () => {
			this.cancelBusyRecheck = null;
			const live = this.state.binding;
			if (!live || this.inFlight === 0) return;
			this.recheckIfDue(live)
				.catch((error: unknown) => console.error(`busy session recheck failed: ${describeError(error)}`))
				.finally(() => this.watchWhileBusy());
		});
	}

	/** No more rechecks: the session ended. */
	stop(): void {
		this.cancelBusyRecheck?.();
		this.cancelBusyRecheck = null;
	}

	/**
	 * A held task expires at `at`: the alarm is moved earlier if it would
	 * fire only after it (one write; it never fires later than the deadline).
	 */
	async wakeAt(at: number): Promise<void> {
		if (this.state.binding && at < this.deadline()) await this.schedule(at);
	}

	/** The one alarm: at `at`, or earlier when a held task expires first (the alarm sweeps it). */
	private schedule(at: number): Promise<void> {
		return this.store.scheduleAlarm(Math.min(at, this.tasks.nextExpiry()));
	}

	private limitAt(): number {
		return this.unverified ? this.verifiedAt + this.state.settings.unverifiedLimitMs : Number.POSITIVE_INFINITY;
	}

	private ageLimitAt(binding: SessionBinding): number {
		return binding.createdAt + this.state.settings.maxSessionAgeMs;
	}

	/** One registry check, shared by everyone who asks while it runs (single-flight). */
	private recheck(binding: SessionBinding): Promise<RecheckOutcome> {
		this.rechecking ??= (async (): Promise<RecheckOutcome> => {
			this.recheckedAt = this.state.clock.now();
			this.registryReads++;
			try {
				const check = await withTimeout(
					this.state.registry.checkSession({
						keyId: binding.keyId,
						userPath: binding.userPath,
						endpoint: binding.endpointCheck,
						members: binding.members.map((member) => ({
							name: member.name,
							generation: member.generation,
							configDigest: member.configDigest,
						})),
					}),
					REGISTRY_TIMEOUT_MS,
					"the registry",
				);
				if (!check.ok) {
					await this.ender.endSession(binding, check.reason);
					return "ended";
				}
				// The latest success counts, whoever started it: the unverified limit runs from here.
				this.verifiedAt = this.state.clock.now();
				this.unverified = false;
				await this.members.configChanged(check.changed);
				return "verified";
			} catch (error) {
				console.warn(`session recheck failed, serving unverified: ${describeError(error)}`);
				if (!this.unverified) {
					this.unverified = true;
					// End the session at the limit even if no request comes, or a call keeps running.
					if (this.state.binding) await this.schedule(this.limitAt());
				}
				return "unreadable";
			} finally {
				this.rechecking = null;
			}
		})();
		return this.rechecking;
	}

	/**
	 * Writes the activity time, at most once per touch interval however many
	 * requests arrive: the check and the update of `persistedActivity` happen
	 * synchronously, so concurrent requests share one write.
	 */
	private touchIfDue(): void {
		const binding = this.state.binding;
		// An ended session is never written back; an unverified one is not extended.
		if (!binding || this.unverified) return;
		const now = this.state.clock.now();
		if (now - this.persistedActivity < this.state.settings.touchIntervalMs) return;
		this.persistedActivity = now;
		const touched = { ...binding, lastActivity: now, verifiedAt: this.verifiedAt };
		this.state.binding = touched;
		this.store.writeBinding(touched).catch((error: unknown) => {
			console.error(`session touch failed: ${describeError(error)}`);
		});
	}
}
