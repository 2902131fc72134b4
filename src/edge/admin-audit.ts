/** What an admin action did, for the audit line: one of these per change the admin API makes. */
export const ADMIN_ACTIONS = [
	"server.created",
	"server.replaced",
	"server.deleted",
	"server.tools_approved",
	"virtual_server.created",
	"virtual_server.replaced",
	"virtual_server.deleted",
	"access_rule.created",
	"access_rule.replaced",
	"access_rule.deleted",
	"policy.created",
	"policy.replaced",
	"policy.deleted",
	"guard.created",
	"guard.replaced",
	"guard.deleted",
	"oauth_grants.revoked",
	"connection.deleted",
	"connector_token.created",
	"connector_token.revoked",
	"key.created",
	"key.deleted",
	"registry.synced",
	"approval.approved",
	"approval.denied",
] as const;
export type AdminAction = (typeof ADMIN_ACTIONS)[number];

/**
 * One structured line per admin change: who (the admin token's holder), what,
 * and the target's name or key id. Never a value: no URL, header or secret.
 * A decision on a held call names its approver too (`by`: "admin", or the
 * principal id of the person who decided it on the /approvals page).
 */
export function audit(action: AdminAction, target: string, by?: string): void {
	const actor = by === undefined || by === "admin" ? "admin" : "approver";
	console.log(JSON.stringify({ event: "admin_audit", actor, action, target, ...(by === undefined ? {} : { by }) }));
}
