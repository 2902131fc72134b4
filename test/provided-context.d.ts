/** Values globalSetup (Node) hands to the tests (workerd) via provide/inject. */
declare module "vitest" {
	export interface ProvidedContext {
		alphaPort: number;
		betaPort: number;
	}
}

export {};
