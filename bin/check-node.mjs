/**
 * Refuses, with one clear message, to run the project on a Node.js older than 24 (what its
 * TypeScript files need: type stripping and the APIs they use). Plain JavaScript, so that it
 * runs on any Node: npm scripts preload it (`node --import ./bin/check-node.mjs bin/x.ts`) and it
 * exits 1 before the .ts file is read. npm scripts normally run on the Node 24 pinned as the
 * devDependency `node`, so this fires only when that pin is missing (an install with
 * --ignore-scripts) or when a .ts file is run directly with an older `node`.
 */
export const REQUIRED_NODE_MAJOR = 24;

/**
 * The message refusing Node `version` (e.g. `v20.20.2`) at `execPath`, or null when it is new
 * enough.
 * @param {string} version
 * @param {string} execPath
 * @returns {string | null}
 */
export function nodeRefusal(version, execPath) {
  const major = Number(version.replace(/^v/, '').split('.')[0]);
  if (major >= REQUIRED_NODE_MAJOR) return null;
  return (
    `agent-runs needs Node.js ${REQUIRED_NODE_MAJOR} or newer; this is Node ${version} (${execPath}).\n` +
    `Run it through npm (npm start, npm run demo, npx agent-runs ...): npm scripts use the Node ${REQUIRED_NODE_MAJOR} ` +
    'pinned in node_modules (run `npm ci` again if node_modules/.bin/node is missing), or install it.\n'
  );
}

const refusal = nodeRefusal(process.version, process.execPath);
if (refusal !== null) {
  process.stderr.write(refusal);
  process.exit(1);
}
