/** Runs `action` once, however often the returned function is called. */
export function once(action: () => void): () => void {
	let called = false;
	return () => {
		if (!called) {
			called = true;
			action();
		}
	};
}
