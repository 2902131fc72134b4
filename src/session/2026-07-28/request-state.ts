import { openToken, signToken } from "../../primitives/signed-token.ts";

/** Who and what a round belongs to: a retry must match all of it. */
export interface RoundOwner {
	keyId: string;
	endpoint: string;
	method: string;
	/** The tool, prompt or resource the request names. */
	name: string;
	/**
	 * A call's arguments as stable JSON: a retry with other arguments is not
	 * the request the round (a confirmation, say) was about. Absent for
	 * other methods, whose states are as they always were.
	 */
	arguments?: string;
}

/**
 * A round's `requestState`: `<round id>.<expiry>.<mac>`, a signed token whose
 * MAC (under SESSION_SECRET) also covers the key, endpoint, method and name of
 * the request (and a call's arguments), so a state copied to another request,
 * key or endpoint is refused.
 */
export function signRequestState(
	secret: string,
	roundId: string,
	expiresAt: number,
	owner: RoundOwner,
): Promise<string> {
	return signToken(secret, `${roundId}.${expiresAt}`, stateBody(roundId, expiresAt, owner));
}

/** The round id of a `requestState` this gateway issued for `owner` and that has not expired at `now`; null otherwise. */
export async function openRequestState(
	secret: string,
	state: string,
	owner: RoundOwner,
	now: number,
): Promise<string | null> {
	let roundId: string | null = null;
	const opened = await openToken(secret, state, (body) => {
		const [id, expires, extra] = body.split(".");
		if (id === undefined || expires === undefined || extra !== undefined) return null;
		const expiresAt = Number(expires);
		if (!Number.isSafeInteger(expiresAt) || expiresAt <= now) return null;
		roundId = id;
		return stateBody(id, expiresAt, owner);
	});
	return opened === null ? null : roundId;
}

function stateBody(roundId: string, expiresAt: number, owner: RoundOwner): string {
	const bound = ["mrtr", roundId, expiresAt, owner.keyId, owner.endpoint, owner.method, owner.name];
	return JSON.stringify(owner.arguments === undefined ? bound : [...bound, owner.arguments]);
}
