import { createApp } from "./edge/app.ts";
import type { Env } from "./env.ts";

export { ConnectorDO } from "./connectors/connector-do.ts";
export { TokenVaultDO } from "./credentials/vault-do.ts";
export { KeySessionsDO } from "./registry/key-sessions-do.ts";
export { RegistryDO } from "./registry/registry-do.ts";
export { SessionDO } from "./session/session-do.ts";
export { CallCountsDO } from "./telemetry/call-counts.ts";

const app = createApp();

export default {
	fetch: (request, env, ctx) => app.fetch(request, env, ctx),
} satisfies ExportedHandler<Env>;
