/** The report's chart (docs/benchmarks-latency.svg): hand-made SVG, no dependency. */

import { percentile } from "./report-format.ts";
import { type BenchResults, TARGET_IDS, TARGET_LABELS, type TargetId } from "./results.ts";

const COLORS: Record<TargetId, string> = {
	direct: "#6b7280",
	floor: "#16a34a",
	server: "#2563eb",
	aggregate: "#dc2626",
};

interface Panel {
	title: string;
	samples: Record<TargetId, number[]>;
}

/** A hand-made SVG: per scenario, the cumulative distribution of latencies of each target. */
export function renderSvg(results: BenchResults): string {
	const panels: Panel[] = [
		{ title: "tools/call echo, concurrency 1", samples: results.latency },
		{ title: `${results.meta.blobKib} KiB result, concurrency 1`, samples: results.blob },
		{ title: "session setup (initialize … first tools/list)", samples: results.setup },
	];
	const panelWidth = 360;
	const margin = { left: 48, right: 20 };
	const y0 = 96;
	const h = 210;
	const width = panels.length * panelWidth;
	const height = y0 + h + 48;
	const parts: string[] = [];
	parts.push(
		`<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="system-ui, -apple-system, Segoe UI, Helvetica, Arial, sans-serif" font-size="11">`,
		"<title>Latency distributions of tools/call: direct, floor and gateway</title>",
		`<rect width="${width}" height="${height}" fill="#ffffff"/>`,
		`<text x="12" y="22" font-size="14" font-weight="600" fill="#111827">Latency distributions (cumulative): direct vs floor vs gateway</text>`,
		`<text x="12" y="40" fill="#4b5563">${escapeXml(`${results.meta.date}, ${results.meta.cores} cores, Node ${results.meta.node}, wrangler ${results.meta.wrangler}${results.quick ? " — quick mode, small samples" : ""}. Right edge of each panel: 1.1 × the largest p99 (the slowest 1 % run off it).`)}</text>`,
	);
	let legendX = 12;
	for (const t of TARGET_IDS) {
		parts.push(
			`<line x1="${legendX}" y1="58" x2="${legendX + 20}" y2="58" stroke="${COLORS[t]}" stroke-width="3"/>`,
			`<text x="${legendX + 26}" y="62" fill="#111827">${escapeXml(TARGET_LABELS[t])}</text>`,
		);
		legendX += 46 + TARGET_LABELS[t].length * 6.5;
	}
	panels.forEach((panel, index) => {
		const x0 = index * panelWidth + margin.left;
		const w = panelWidth - margin.left - margin.right;
		const p99 = Math.max(0, ...TARGET_IDS.map((t) => percentile(panel.samples[t], 99)).filter(Number.isFinite));
		const step = niceStep(Math.max(p99 * 1.1, 0.001) / 4);
		const xMax = Math.ceil((p99 * 1.1) / step) * step || step * 4;
		const sx = (value: number) => x0 + (Math.min(value, xMax) / xMax) * w;
		const sy = (fraction: number) => y0 + h - fraction * h;
		parts.push(
			`<text x="${x0}" y="${y0 - 10}" font-size="12" font-weight="600" fill="#111827">${escapeXml(panel.title)}</text>`,
		);
		for (const q of [0, 0.25, 0.5, 0.75, 0.9, 1]) {
			parts.push(
				`<line x1="${x0}" y1="${sy(q).toFixed(1)}" x2="${x0 + w}" y2="${sy(q).toFixed(1)}" stroke="#e5e7eb"/>`,
				`<text x="${x0 - 6}" y="${(sy(q) + 4).toFixed(1)}" text-anchor="end" fill="#6b7280">p${Math.round(q * 100)}</text>`,
			);
		}
		for (let value = 0; value <= xMax + step / 2; value += step) {
			const x = sx(value);
			parts.push(
				`<line x1="${x.toFixed(1)}" y1="${y0}" x2="${x.toFixed(1)}" y2="${y0 + h}" stroke="#f3f4f6"/>`,
				`<text x="${x.toFixed(1)}" y="${y0 + h + 15}" text-anchor="middle" fill="#6b7280">${formatTick(value)}</text>`,
			);
		}
		parts.push(
			`<rect x="${x0}" y="${y0}" width="${w}" height="${h}" fill="none" stroke="#9ca3af"/>`,
			`<text x="${x0 + w / 2}" y="${y0 + h + 32}" text-anchor="middle" fill="#374151">latency, ms</text>`,
		);
		for (const t of TARGET_IDS) {
			const sorted = [...panel.samples[t]].sort((a, b) => a - b);
			if (sorted.length === 0) continue;
			const stride = Math.max(1, Math.floor(sorted.length / 400));
			const points: string[] = [`${sx(sorted[0] ?? 0).toFixed(1)},${sy(0).toFixed(1)}`];
			for (let i = 0; i < sorted.length; i += stride) {
				points.push(`${sx(sorted[i] ?? 0).toFixed(1)},${sy((i + 1) / sorted.length).toFixed(1)}`);
			}
			points.push(`${sx(sorted[sorted.length - 1] ?? 0).toFixed(1)},${sy(1).toFixed(1)}`);
			parts.push(
				`<polyline fill="none" stroke="${COLORS[t]}" stroke-width="2" stroke-linejoin="round" points="${points.join(" ")}"/>`,
			);
		}
	});
	parts.push("</svg>", "");
	return parts.join("\n");
}

/** 1, 2, 2.5 or 5 times a power of ten, at least `value`. */
function niceStep(value: number): number {
	const magnitude = 10 ** Math.floor(Math.log10(value));
	for (const factor of [1, 2, 2.5, 5, 10]) {
		if (factor * magnitude >= value) return factor * magnitude;
	}
	return 10 * magnitude;
}

function formatTick(value: number): string {
	return Number(value.toPrecision(6)).toString();
}

function escapeXml(text: string): string {
	return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}
