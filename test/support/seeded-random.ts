/**
 * A generator of numbers in [0, 1) that gives the same sequence for the same seed (a linear
 * congruential generator): generated catalogs and inputs that are the same on every run.
 */
export function seededRandom(seed: number): () => number {
	let state = seed;
	return () => {
		state = (state * 1_103_515_245 + 12_345) % 2_147_483_648;
		return state / 2_147_483_648;
	};
}
