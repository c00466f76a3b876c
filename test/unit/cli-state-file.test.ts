import { mkdirSync, mkdtempSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  LOCAL_STATE_PATH,
  LocalStateError,
  readLocalState,
  removeLocalState,
  writeLocalState,
} from '../../lib/client/state-file.ts';

const dir = () => mkdtempSync(join(tmpdir(), 'agent-runs-state-'));

describe('the local state file', () => {
  it('round-trips {url, token} and extra fields, readable by the owner only', () => {
    const cwd = dir();
    const path = writeLocalState({ url: 'http://127.0.0.1:8787', token: 't0k', pid: 42 }, cwd);
    expect(path).toBe(join(cwd, LOCAL_STATE_PATH));
    expect(LOCAL_STATE_PATH).toBe('.agent-runs/local.json');
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(readLocalState(cwd)).toEqual({ url: 'http://127.0.0.1:8787', token: 't0k', pid: 42 });
  });

  it('reads null when there is none, and null again after removal', () => {
    const cwd = dir();
    expect(readLocalState(cwd)).toBeNull();
    writeLocalState({ url: 'http://localhost:1', token: 'x' }, cwd);
    removeLocalState(cwd);
    expect(readLocalState(cwd)).toBeNull();
    expect(() => removeLocalState(cwd)).not.toThrow();
  });

  it('throws LocalStateError for a file that is not JSON or not a state file', () => {
    for (const content of ['{nope', '{"url":"ftp://x","token":"t"}', '{"url":"http://x:1"}']) {
      const cwd = dir();
      mkdirSync(join(cwd, '.agent-runs'));
      writeFileSync(join(cwd, LOCAL_STATE_PATH), content);
      expect(() => readLocalState(cwd)).toThrow(LocalStateError);
    }
  });

  it('refuses to write a state without a token', () => {
    expect(() => writeLocalState({ url: 'http://127.0.0.1:1', token: '' }, dir())).toThrow();
  });
});
