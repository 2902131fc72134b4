import { z } from "zod";

/** How long a connect link, and the authorization flow it starts, may be used: 10 minutes. */
export const CONNECT_LIFETIME_MS = 10 * 60_000;

/**
 * An authorization flow under way: what the callback needs to finish it (the
 * PKCE verifier among it, so it is kept sealed like the tokens), stored in
 * the person's vault under its `state`, taken once.
 */
export const ConnectFlowSchema = z.object({
	server: z.string().min(1),
	/** The server's incarnation the flow was started for. */
	generation: z.string().min(1),
	/** Who the connection is for: the callback refuses another principal. */
	principalId: z.string().min(1),
	/** A digest binding the flow to the browser that started it (a cookie's). */
	browserBinding: z.string().min(1),
	codeVerifier: z.string().min(43).max(128),
	redirectUri: z.string().min(1),
	/** The URL elicitation to complete when the connection is made; null when the client was given a link in a sentence. */
	elicitationId: z.string().nullable(),
	/** The authorization server's metadata as discovered at the start: JSON its user parses. */
	issuerMetadata: z.unknown(),
	createdAt: z.number().int().nonnegative(),
});
export type ConnectFlow = z.infer<typeof ConnectFlowSchema>;
