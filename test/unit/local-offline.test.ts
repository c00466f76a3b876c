/**
 * The offline first run of the local stack: with no provider configured
 * `npm start` serves the scripted local model at the default path and the banner says so; its
 * try command creates a task-mode run offered a sample tool.
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_MODEL_TURN_FUNCTION } from '../../lib/contracts/index.ts';
import { modelBannerLines, TRY_COMMAND } from '../../lib/local/banner.ts';
import { registerSampleTools } from '../../lib/local/sample-tools.ts';
import { offlineModelOptions } from '../../lib/local/start-run.ts';
import { AgentLoopContext } from '../../lib/reducers/index.ts';
import { createToolRegistry } from '../../lib/tools/registry.ts';

describe('offline model of the local stack', () => {
  it('serves the scripted model at the default path when no provider is configured', async () => {
    const options = offlineModelOptions({});
    const fn = options.modelFunctions?.[DEFAULT_MODEL_TURN_FUNCTION];
    expect(Object.keys(options.modelFunctions ?? {})).toEqual([DEFAULT_MODEL_TURN_FUNCTION]);
    const answer = await fn?.(
      {
        run_id: 'r',
        operation_id: 'r/op/1',
        attempt: 1,
        subject: { workspace: 'demo', path: '/first' },
        executor_config: {},
        request: { tools_offered: [], tool_results: [] },
      },
      { messages: [{ role: 'user', content: 'hi' }], manifest: { from_seq: 1, to_seq: 1, included: [] } },
      new AbortController().signal,
    );
    expect(answer).toMatchObject({ call: { provider: 'local', model_id: 'local/scripted' } });
  });

  it('serves nothing of its own when the environment configures a provider', () => {
    expect(offlineModelOptions({ BEDROCK_MODEL_ID: 'amazon.nova-micro-v1:0' })).toEqual({});
    expect(offlineModelOptions({ OPENAI_BASE_URL: 'http://127.0.0.1:1/v1', OPENAI_MODEL: 'm' })).toEqual({});
  });

  it('throws ModelConfigError for a half configuration, as the runtime would', () => {
    expect(() => offlineModelOptions({ OPENAI_MODEL: 'm' })).toThrow(
      expect.objectContaining({ code: 'model_config_invalid', variable: 'OPENAI_BASE_URL' }),
    );
  });

  it('names the scripted model in the banner, the default path, and how to configure a provider', () => {
    const { modelFunctions, modelDescriptions } = offlineModelOptions({});
    const lines = modelBannerLines(
      { models: [], defaultPath: DEFAULT_MODEL_TURN_FUNCTION },
      Object.keys(modelFunctions ?? {}),
      modelDescriptions,
    );
    expect(lines).toEqual([
      `  models: ${DEFAULT_MODEL_TURN_FUNCTION}  scripted local model (no provider configured)`,
      `          default (a run that names no executor_config.model_turn_function): ${DEFAULT_MODEL_TURN_FUNCTION}`,
      '          For a real model set BEDROCK_MODEL_ID, or OPENAI_BASE_URL + OPENAI_MODEL (+ OPENAI_API_KEY), and restart.',
    ]);
  });

  it('prints a try command whose context is a valid task-mode context offering a sample tool', () => {
    const context = /--context '([^']+)'/.exec(TRY_COMMAND)?.[1];
    const parsed = AgentLoopContext.parse(JSON.parse(context ?? 'null'));
    expect(parsed.mode).toBe('task');
    const registry = createToolRegistry();
    registerSampleTools(registry);
    const names = registry.list().map((t) => t.name);
    expect(parsed.tools?.map((t) => t.name).every((n) => names.includes(n))).toBe(true);
    expect(TRY_COMMAND).toContain('--reducer /lib/raisin/ai/agent-run-reducer');
  });
});
