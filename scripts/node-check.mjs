// Plain JavaScript on purpose: it must run on the Node that cannot run the project's TypeScript
// scripts, and say so in a sentence instead of ERR_UNKNOWN_FILE_EXTENSION.
const [major = 0, minor = 0] = process.versions.node.split(".").map(Number);
if (major < 22 || (major === 22 && minor < 18)) {
	console.error(
		`This project needs Node 22.18 or newer (it runs its TypeScript scripts directly); this is Node ${process.versions.node}.\n` +
			'Install it with nvm (`nvm install`, which reads .nvmrc) or `npm install --prefix "$HOME/.node22" node@22` and put\n' +
			'"$HOME/.node22/node_modules/.bin" first on PATH.',
	);
	process.exit(1);
}
