/**
 * Which of a fixed set of lowercase ASCII keywords occur in a text, ignoring
 * ASCII case: an Aho–Corasick automaton built once, read one character at a
 * time, so a text costs one table step per character however many keywords
 * there are (a few hundred for gitleaks' rules) and however often they occur.
 */

/** Characters outside the keywords' alphabet all map to 0, which no keyword contains. */
const OTHER = 0;

export class KeywordAutomaton {
	readonly #keywords: readonly string[];
	/** UTF-16 code unit → its column in the table (ASCII letters folded to lowercase). */
	readonly #alphabet = new Uint8Array(128);
	readonly #columns: number;
	/** state × column → next state, complete (failure links already followed). */
	readonly #next: Int32Array;
	/** Per state: the keywords (indexes) that end there, its own and through failure links. */
	readonly #outputs: number[][];

	constructor(keywords: readonly string[]) {
		this.#keywords = keywords;
		let columns = 1;
		for (const keyword of keywords)
			for (let i = 0; i < keyword.length; i++) {
				const code = keyword.charCodeAt(i);
				if (code >= 128) throw new Error(`keyword ${JSON.stringify(keyword)} is not ASCII`);
				if (this.#alphabet[code] === 0) this.#alphabet[code] = columns++;
			}
		for (let upper = 65; upper <= 90; upper++) this.#alphabet[upper] = this.#alphabet[upper + 32] ?? OTHER;
		this.#columns = columns;
		// The trie: goto[state * columns + column], -1 where absent.
		const goto: number[] = new Array(columns).fill(-1);
		const outputs: number[][] = [[]];
		keywords.forEach((keyword, index) => {
			let state = 0;
			for (let i = 0; i < keyword.length; i++) {
				const column = this.#alphabet[keyword.charCodeAt(i)] ?? OTHER;
				let next = goto[state * columns + column] ?? -1;
				if (next < 0) {
					next = outputs.length;
					outputs.push([]);
					for (let c = 0; c < columns; c++) goto.push(-1);
					goto[state * columns + column] = next;
				}
				state = next;
			}
			outputs[state]?.push(index);
		});
		// Breadth first: each state's missing transitions are its failure state's.
		const next = new Int32Array(outputs.length * columns);
		const fail = new Int32Array(outputs.length);
		const queue: number[] = [];
		for (let c = 0; c < columns; c++) {
			const child = goto[c] ?? -1;
			next[c] = Math.max(child, 0);
			if (child > 0) queue.push(child);
		}
		for (let head = 0; head < queue.length; head++) {
			const state = queue[head] ?? 0;
			outputs[state]?.push(...(outputs[fail[state] ?? 0] ?? []));
			for (let c = 0; c < columns; c++) {
				const child = goto[state * columns + c] ?? -1;
				const viaFailure = next[(fail[state] ?? 0) * columns + c] ?? 0;
				if (child < 0) {
					next[state * columns + c] = viaFailure;
				} else {
					next[state * columns + c] = child;
					fail[child] = viaFailure;
					queue.push(child);
				}
			}
		}
		this.#next = next;
		this.#outputs = outputs;
	}

	/**
	 * Every occurrence of a keyword in `text`, in the order their ends are
	 * reached: `visit(index, start, end)`, `index` the keyword's in the list
	 * the automaton was built from. One table step per character, plus one call
	 * per occurrence.
	 */
	occurrences(text: string, visit: (index: number, start: number, end: number) => void): void {
		let state = 0;
		for (let i = 0; i < text.length; i++) {
			const code = text.charCodeAt(i);
			const column = code < 128 ? (this.#alphabet[code] ?? OTHER) : OTHER;
			state = this.#next[state * this.#columns + column] ?? 0;
			for (const index of this.#outputs[state] ?? []) {
				visit(index, i + 1 - (this.#keywords[index]?.length ?? 0), i + 1);
			}
		}
	}

	/** Whether any keyword occurs in `text`: the same pass, ended at the first. */
	anyIn(text: string): boolean {
		let state = 0;
		for (let i = 0; i < text.length; i++) {
			const code = text.charCodeAt(i);
			const column = code < 128 ? (this.#alphabet[code] ?? OTHER) : OTHER;
			state = this.#next[state * this.#columns + column] ?? 0;
			if ((this.#outputs[state]?.length ?? 0) > 0) return true;
		}
		return false;
	}
}
