import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EngineError, LeaseLost, StoreUnavailable } from '../../lib/engine/errors.ts';
import { EngineModuleError } from '../../lib/engine/module-error.ts';
import { CommitRejected, CommitTooLarge, RegistryConflictError } from '../../lib/engine/ports.ts';
import { ApiKeyUnavailable, ModelConfigError } from '../../lib/models/configured.ts';
import { ModelsModuleError } from '../../lib/models/index.ts';
import { loadTrajectories } from '../../lib/models/tau-bench.ts';
import {
  InMemoryFunctionRegistry,
  resolveLimits,
  SandboxLimitError,
  SandboxModuleError,
} from '../../lib/sandbox/index.ts';
import { CatalogueUnavailable } from '../../lib/tools/catalogue-host.ts';
import { ToolConfigError } from '../../lib/tools/configured.ts';
import {
  createToolRegistry,
  ToolError,
  ToolRegistrationError,
  ToolsModuleError,
} from '../../lib/tools/index.ts';

/** The error `run` throws (fails the test when it throws nothing). */
function caught(run: () => unknown): unknown {
  try {
    run();
  } catch (error) {
    return error;
  }
  throw new Error('expected a throw');
}

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'module-errors-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('each module throws errors under one base with a stable code and retryable', () => {
  it('lib/tools: a refused registration and a classified tool failure', () => {
    const registration = caught(() =>
      createToolRegistry().register({
        name: ' padded ',
        version: '1.0.0',
        input_schema: { type: 'object' },
        handler: { kind: 'module', fn: async () => null },
        metadata: { mutating: false, replay_safe: true },
      }),
    );
    expect(registration).toBeInstanceOf(ToolRegistrationError);
    expect(registration).toBeInstanceOf(ToolsModuleError);
    expect(registration).toMatchObject({ code: 'invalid_name', retryable: false });

    const failure = new ToolError('rate_limited', 'slow down');
    expect(failure).toBeInstanceOf(ToolsModuleError);
    expect(failure).toMatchObject({ code: 'rate_limited', retryable: true });
  });

  it('lib/models: a tau-bench file of the wrong shape', async () => {
    const path = join(dir, 'trajectories.json');
    await writeFile(path, JSON.stringify({ not: 'an array' }));
    const error = await loadTrajectories(path).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ModelsModuleError);
    expect(error).toMatchObject({ name: 'TauBenchFormatError', code: 'tau_bench_format', retryable: false });
  });

  it('lib/sandbox: an unregistrable artifact and a bad limit', async () => {
    const artifact = await new InMemoryFunctionRegistry()
      .put('no-slash', 'js', new Uint8Array([1]))
      .catch((e: unknown) => e);
    expect(artifact).toBeInstanceOf(SandboxModuleError);
    expect(artifact).toMatchObject({ code: 'invalid_artifact', retryable: false });

    const limit = caught(() => resolveLimits({ memoryBytes: -1 }));
    expect(limit).toBeInstanceOf(SandboxLimitError);
    expect(limit).toBeInstanceOf(SandboxModuleError);
    expect(limit).toMatchObject({ code: 'invalid_limit', limit: 'memoryBytes', retryable: false });
  });

  it('lib/engine: API errors, store refusals, a lost lease and a refused publication', () => {
    const cases: [EngineModuleError, string, boolean][] = [
      [new EngineError('run_not_found', 'no run'), 'run_not_found', false],
      [new EngineError('store_unavailable', 'busy', {}, { retryable: true }), 'store_unavailable', true],
      [new CommitRejected('stale_version', 'moved'), 'stale_version', false],
      [new CommitRejected('transaction_conflict', 'busy'), 'transaction_conflict', true],
      [new StoreUnavailable('slow down'), 'store_unavailable', true],
      [new CommitTooLarge('too large'), 'commit_too_large', false],
      [new LeaseLost('fenced out'), 'lease_lost', false],
      [new RegistryConflictError('head_moved', 'moved'), 'head_moved', true],
      [new RegistryConflictError('version_exists', 'exists'), 'version_exists', false],
    ];
    for (const [error, code, retryable] of cases) {
      expect(error).toBeInstanceOf(EngineModuleError);
      expect({ code: error.code, retryable: error.retryable }).toEqual({ code, retryable });
    }
  });

  it('lib/tools and lib/models: configuration errors sit under their module base too', () => {
    expect(new ToolConfigError('[0].name', 'missing')).toBeInstanceOf(ToolsModuleError);
    expect(new CatalogueUnavailable('down')).toMatchObject({
      code: 'catalogue_unavailable',
      retryable: true,
    });
    expect(new CatalogueUnavailable('down')).toBeInstanceOf(ToolsModuleError);
    expect(new ModelConfigError('OPENAI_MODEL', 'missing')).toBeInstanceOf(ModelsModuleError);
    expect(new ApiKeyUnavailable('no key', true)).toMatchObject({
      code: 'api_key_unavailable',
      retryable: true,
    });
    expect(new ApiKeyUnavailable('no key', true)).toBeInstanceOf(ModelsModuleError);
  });
});
