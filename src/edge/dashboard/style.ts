/**
 * The dashboard's own rules, appended after the pages' shared stylesheet
 * (src/auth/pages.ts): a wider page for tables, a header that wraps on a
 * phone, tables that become stacked rows on a phone (and scroll inside their
 * box rather than the page sideways if a value is still too wide), and the
 * bars of the call figures. Colours are the shared sheet's variables, so light and dark both read.
 */
export const DASHBOARD_STYLE = [
	"body{max-width:64rem}",
	"header{display:flex;flex-wrap:wrap;gap:.5rem 1rem;align-items:baseline;justify-content:space-between;border-bottom:1px solid var(--line);margin-bottom:1rem}",
	"header form{margin:0}",
	"nav{display:flex;flex-wrap:wrap;gap:.25rem 1rem;margin:0 0 1rem}",
	"section{margin:0 0 2rem}",
	"section>h2:first-child{margin-top:0}",
	// Cells break between words only: a column is at least as wide as its longest word, and a
	// table wider than its box scrolls inside it (.scroll) instead of splitting "Revoke" or a date.
	"td{overflow-wrap:normal;word-break:normal;vertical-align:top}",
	"th{white-space:nowrap}",
	// On a phone (under 40rem) a table's rows stack: each row a block, each cell a line that starts
	// with its column's name (data-label); the head stays for screen readers, out of sight.
	`@media (max-width:40rem){${[
		".rows table,.rows tbody,.rows tr,.rows td{display:block}",
		".rows thead{position:absolute;width:1px;height:1px;overflow:hidden;clip-path:inset(50%);white-space:nowrap}",
		".rows tr{border-bottom:1px solid var(--line);padding:.4rem 0}",
		".rows td{border:0;padding:.15rem 0}",
		'.rows td[data-label]:not([data-label=""])::before{content:attr(data-label);display:inline-block;min-width:6.5rem;padding-right:.5rem;font-weight:600;color:var(--muted)}',
	].join("")}}`,
	"form.inline{display:inline}",
	"fieldset{border:1px solid var(--line);padding:.5rem .75rem;margin:.5rem 0}",
	"input[type=text],input[type=url],input[type=password],select{font:inherit;width:100%;max-width:28rem;box-sizing:border-box;padding:.3rem;background:var(--bg);color:var(--fg);border:1px solid var(--line);border-radius:6px}",
	".secret{font-family:ui-monospace,monospace;background:var(--bg);border:1px solid var(--line);padding:.5rem;overflow-wrap:anywhere}",
	".bar{display:block;height:.6rem;background:var(--accent);min-width:1px}",
	".bar.errors{background:var(--bad)}",
].join("");
