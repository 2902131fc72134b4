import { MAX_IN_FLIGHT_PER_CONNECTOR } from "./frames.ts";

export interface Candidate {
	id: string;
	sessions: number;
	inFlight: number;
	draining: boolean;
}

/** Why no connector took a new session. */
export type NoChoice = "none-online" | "all-draining" | "all-busy";

/**
 * The connector a new upstream session goes to: the least busy (fewest
 * sessions held, ties by fewest requests in flight) among those that take
 * new sessions and have a free slot.
 */
export function chooseConnector(candidates: readonly Candidate[]): Candidate | NoChoice {
	if (candidates.length === 0) return "none-online";
	const open = candidates.filter((candidate) => !candidate.draining);
	if (open.length === 0) return "all-draining";
	const free = open.filter((candidate) => candidate.inFlight < MAX_IN_FLIGHT_PER_CONNECTOR);
	let best: Candidate | undefined;
	for (const candidate of free) {
		if (
			!best ||
			candidate.sessions < best.sessions ||
			(candidate.sessions === best.sessions && candidate.inFlight < best.inFlight)
		)
			best = candidate;
	}
	return best ?? "all-busy";
}
