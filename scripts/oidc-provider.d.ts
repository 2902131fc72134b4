/**
 * The part of oidc-provider 9 that scripts/oidc-idp.ts uses. The package ships
 * no types; these follow its documentation (docs/README.md, "Configuration
 * options") and lib/provider.js, and cover only what the local IdP touches.
 */
declare module "oidc-provider" {
	import type { IncomingMessage, ServerResponse } from "node:http";

	/** What `findAccount` answers; `claims()` may hold more than a scope releases, the provider filters. */
	export interface Account {
		accountId: string;
		claims(use: string, scope: string): Record<string, unknown> | Promise<Record<string, unknown>>;
	}

	/** The few client properties the configuration hooks read. */
	export interface Client {
		clientId: string;
		clientAuthMethod: string;
		redirectUris: string[];
	}

	/** A token as `extraTokenClaims` sees it (an AccessToken or ClientCredentials model). */
	export interface IssuedToken {
		kind: string;
		accountId?: string;
		clientId?: string;
	}

	/** A resource server as `features.resourceIndicators.getResourceServerInfo` describes it. */
	export interface ResourceServer {
		scope: string;
		audience?: string;
		accessTokenTTL?: number;
		accessTokenFormat?: "opaque" | "jwt";
		jwt?: { sign?: { alg?: string; kid?: string } };
	}

	/** The koa context the hooks receive, as far as they read or write it. */
	export interface HookContext {
		oidc: { route: string };
		type: string;
		body: unknown;
	}

	export interface ClientMetadata {
		client_id: string;
		client_secret?: string;
		redirect_uris: string[];
		token_endpoint_auth_method?: string;
		grant_types?: string[];
		response_types?: string[];
	}

	export interface Configuration {
		clients?: ClientMetadata[];
		jwks?: { keys: Record<string, unknown>[] };
		cookies?: {
			keys?: string[];
			long?: { httpOnly?: boolean; sameSite?: "lax" | "strict" | "none"; secure?: boolean };
			short?: { httpOnly?: boolean; sameSite?: "lax" | "strict" | "none"; secure?: boolean };
		};
		claims?: Record<string, string[] | null>;
		scopes?: string[];
		conformIdTokenClaims?: boolean;
		pkce?: { required?: (ctx: HookContext, client: Client) => boolean };
		findAccount?: (ctx: HookContext, sub: string, token?: unknown) => Promise<Account | undefined>;
		extraTokenClaims?: (
			ctx: HookContext,
			token: IssuedToken,
		) => Promise<Record<string, unknown> | undefined> | Record<string, unknown> | undefined;
		clientBasedCORS?: (ctx: HookContext, origin: string, client: Client) => boolean;
		renderError?: (ctx: HookContext, out: Record<string, string>, error: Error) => void | Promise<void>;
		ttl?: Record<string, number>;
		features?: {
			devInteractions?: { enabled: boolean };
			registration?: { enabled: boolean; initialAccessToken?: boolean | string };
			resourceIndicators?: {
				enabled: boolean;
				defaultResource?: (
					ctx: HookContext,
					client: Client,
					oneOf?: string[],
				) => Promise<string | string[] | undefined>;
				getResourceServerInfo?: (ctx: HookContext, indicator: string, client: Client) => Promise<ResourceServer>;
				useGrantedResource?: (ctx: HookContext, model: unknown) => Promise<boolean>;
			};
		};
	}

	/** An interaction session, as `interactionDetails` returns it. */
	export interface Interaction {
		uid: string;
		prompt: { name: string; reasons: string[]; details: Record<string, unknown> };
		/** The authorization request's parameters (`resource` may repeat, so it may be an array). */
		params: Record<string, unknown>;
		session?: { accountId?: string };
		grantId?: string;
	}

	export interface InteractionResult {
		login?: { accountId: string; remember?: boolean };
		consent?: { grantId?: string };
		error?: string;
		error_description?: string;
	}

	export interface Grant {
		addOIDCScope(scope: string): void;
		addOIDCClaims(claims: string[]): void;
		addResourceScope(resource: string, scope: string): void;
		/** Stores the grant; resolves to its id. */
		save(): Promise<string>;
	}

	export class Provider {
		constructor(issuer: string, configuration?: Configuration);
		readonly issuer: string;
		readonly Grant: new (properties: {
			accountId: string;
			clientId: string;
		}) => Grant;
		/** The koa app's node:http request listener. */
		callback(): (req: IncomingMessage, res: ServerResponse) => void;
		interactionDetails(req: IncomingMessage, res: ServerResponse): Promise<Interaction>;
		interactionFinished(
			req: IncomingMessage,
			res: ServerResponse,
			result: InteractionResult,
			options?: { mergeWithLastSubmission?: boolean },
		): Promise<void>;
		on(event: "server_error", listener: (ctx: unknown, error: Error) => void): this;
	}

	export const errors: {
		InvalidTarget: new (description?: string) => Error;
	};
}
