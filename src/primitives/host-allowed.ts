/**
 * Whether a host name (lowercase, no port) is one an ALLOWED_HOSTS entry admits: the name itself,
 * or `*.suffix` for every subdomain of suffix (not suffix itself). The edge's Host check and
 * `npm run deploy-check` (a route's host must be listed) both ask this.
 */
export function hostAllowed(host: string, allowed: string): boolean {
	if (allowed.startsWith("*.")) return host.endsWith(allowed.slice(1)) && host.length > allowed.length - 1;
	return host === allowed;
}
