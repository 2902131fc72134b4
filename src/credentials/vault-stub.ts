import type { Env } from "../env.ts";

/** The vault object of a person or key (see `Caller.vault`): one per name, wherever it is asked from. */
export function vaultOf(env: Env, vault: string) {
	return env.VAULTS.get(env.VAULTS.idFromName(vault));
}
