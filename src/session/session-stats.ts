/**
 * What a session has cost so far, since its instance started (benchmarks,
 * operators). It imports nothing, so Node-side programs can import it.
 */
export interface SessionStats {
	storageReads: number;
	storageWrites: number;
	/** Rechecks made (each reads the registry's read path). */
	registryReads: number;
	/** Workers KV reads those rechecks made. */
	kvReads: number;
	upstreamRequests: number;
	inFlight: number;
	/** Storage writes of the event buffer (stream events kept for resumption, and their pruning). */
	eventBufferWrites: number;
	/** Wall time this object was kept active (an RPC running, or a call's reply being read). */
	activeMs: number;
}
