import { connectorFetch } from "./connectors/connector-fetch.ts";
import { createApp } from "./edge/app.ts";
import type { Env } from "./env.ts";
import { openApiFetch } from "./openapi/openapi-fetch.ts";
import { CONNECTOR_ORIGIN } from "./registry/connector-tokens.ts";
import { OPENAPI_ORIGIN } from "./registry/openapi-records.ts";
import { serveOrigin } from "./upstream/served-origins.ts";

export { ConnectorDO } from "./connectors/connector-do.ts";
export { TokenVaultDO } from "./credentials/vault-do.ts";
export { KeySessionsDO } from "./registry/key-sessions-do.ts";
export { RegistryDO } from "./registry/registry-do.ts";
export { SessionDO } from "./session/session-do.ts";
export { CallCountsDO } from "./telemetry/call-counts.ts";

// Servers reached through connectors have addresses under CONNECTOR_ORIGIN: their requests go to their ConnectorDO.
serveOrigin(CONNECTOR_ORIGIN, connectorFetch);
// Servers made from OpenAPI documents have addresses under OPENAPI_ORIGIN: they are answered in this isolate.
serveOrigin(OPENAPI_ORIGIN, openApiFetch);

const app = createApp();

export default {
	fetch: (request, env, ctx) => app.fetch(request, env, ctx),
} satisfies ExportedHandler<Env>;
