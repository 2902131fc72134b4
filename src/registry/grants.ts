/**
 * Whether a grant of the gateway's authorization server still exists: a
 * session's recheck, so a revoked sign-in ends its sessions. The library
 * (`@cloudflare/workers-oauth-provider`) keeps each grant in OAUTH_KV under
 * `grant:<user id>:<grant id>`; one read answers it.
 */
export async function grantExists(kv: KVNamespace, userId: string, grantId: string): Promise<boolean> {
	return (await kv.get(`grant:${userId}:${grantId}`)) !== null;
}
