import type { Env as GatewayEnv } from "../src/env.ts";

declare global {
	namespace Cloudflare {
		interface Env extends GatewayEnv {}
		interface GlobalProps {
			mainModule: typeof import("../src/index.ts");
		}
	}
}
