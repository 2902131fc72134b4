import { describeError } from "../mcp/gateway-error.ts";
import type { ListenFrames, SessionDO, SessionScope, WindowEnd } from "../session/session-do.ts";

export type SessionStub = DurableObjectStub<SessionDO>;

/** Tells the session how a window (or a member's stream in it) ended; null when it could not be told (logged). */
export function reportEnd(
	stub: SessionStub,
	scope: SessionScope,
	window: string,
	end: WindowEnd,
): Promise<ListenFrames | null> {
	return stub.listenEnded(scope, window, end).catch((error: unknown) => {
		console.warn(`listening window: the session was not told that it ended (${end.by}): ${describeError(error)}`);
		return null;
	});
}
