/**
 * The dashboard's own rules, appended after the pages' shared stylesheet
 * (src/auth/pages.ts): a wider page for tables, a header that wraps on a
 * phone, tables that scroll inside their box rather than the page sideways,
 * and the bars of the call figures. Colours are the shared sheet's variables, so light and dark both read.
 */
export const DASHBOARD_STYLE = [
	"body{max-width:64rem}",
	"header{display:flex;flex-wrap:wrap;gap:.5rem 1rem;align-items:baseline;justify-content:space-between;border-bottom:1px solid var(--line);margin-bottom:1rem}",
	"header form{margin:0}",
	"nav{display:flex;flex-wrap:wrap;gap:.25rem 1rem;margin:0 0 1rem}",
	"section{margin:0 0 2rem}",
	"section>h2:first-child{margin-top:0}",
	"td{overflow-wrap:anywhere;vertical-align:top}",
	// Headings stay whole; a table wider than a phone scrolls inside its box instead.
	"th{white-space:nowrap}",
	"form.inline{display:inline}",
	"fieldset{border:1px solid var(--line);padding:.5rem .75rem;margin:.5rem 0}",
	"input[type=text],input[type=url],input[type=password],select{font:inherit;width:100%;max-width:28rem;box-sizing:border-box;padding:.3rem;background:var(--bg);color:var(--fg);border:1px solid var(--line);border-radius:6px}",
	".secret{font-family:ui-monospace,monospace;background:var(--bg);border:1px solid var(--line);padding:.5rem;overflow-wrap:anywhere}",
	".bar{display:block;height:.6rem;background:var(--accent);min-width:1px}",
	".bar.errors{background:var(--bad)}",
].join("");
