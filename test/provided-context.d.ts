/** Values globalSetup (Node) hands to the tests (workerd) via provide/inject. */
declare module "vitest" {
	export interface ProvidedContext {
		alphaPort: number;
		betaPort: number;
		gammaPort: number;
		shiftingPort: number;
		mutablePort: number;
		pagedPort: number;
		/** The gateway bundled as a second, separately loaded edge Worker. */
		secondEdgePath: string;
	}
}

export {};
