/** The Node.js version check every npm script preloads (bin/check-node.mjs). */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { nodeRefusal, REQUIRED_NODE_MAJOR } from '../../bin/check-node.mjs';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

describe('the Node.js version check', () => {
  it('refuses a Node older than 24 with one message naming the version and what to do', () => {
    const message = nodeRefusal('v20.20.2', '/usr/bin/node');
    expect(message).toBe(
      'agent-runs needs Node.js 24 or newer; this is Node v20.20.2 (/usr/bin/node).\n' +
        'Run it through npm (npm start, npm run demo, npx agent-runs ...): npm scripts use the Node 24 ' +
        'pinned in node_modules (run `npm ci` again if node_modules/.bin/node is missing), or install it.\n',
    );
    expect(nodeRefusal('v22.22.0', '/opt/node')).not.toBeNull();
  });

  it('lets Node 24 and newer through', () => {
    expect(REQUIRED_NODE_MAJOR).toBe(24);
    expect(nodeRefusal('v24.0.0', '/x')).toBeNull();
    expect(nodeRefusal('v26.1.0', '/x')).toBeNull();
  });

  it('runs the CLI when preloaded on this Node, printing nothing of its own', () => {
    const result = spawnSync(
      process.execPath,
      ['--import', './bin/check-node.mjs', 'bin/agent-runs.ts', '--version'],
      { cwd: ROOT, encoding: 'utf8' },
    );
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
  });
});
