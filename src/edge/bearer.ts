const BEARER = /^Bearer\s+(\S+)\s*$/i;

/** The token of an `Authorization: Bearer <token>` header, or null when there is none. */
export function bearerToken(request: Request): string | null {
	return BEARER.exec(request.headers.get("authorization") ?? "")?.[1] ?? null;
}
