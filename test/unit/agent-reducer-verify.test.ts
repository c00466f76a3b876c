/**
 * Verified completion of the default agent reducer (context.verify_completion / verifier_tool):
 * a claim of success completes `succeeded` only with evidence, else `partial` or a question to
 * the user, saying why. Driven through RunDriver (core's validation rules, determinism and
 * re-delivery checked on every answer).
 */
import { describe, expect, it } from 'vitest';
import type { ToolResultEnvelope } from '../../lib/contracts/index.ts';
import type { AgentLoopContext, AgentLoopState } from '../../lib/reducers/index.ts';
import { RunDriver } from './agent-reducer-harness.ts';

const SCHEMA = { type: 'object', properties: {} };
const TOOLS: NonNullable<AgentLoopContext['tools']> = [
  { name: 'write_doc', schema: SCHEMA, mutating: true, replay_safe: true },
  { name: 'read_doc', schema: SCHEMA, mutating: false },
  { name: 'recheck', schema: SCHEMA, mutating: false, function_path: '/lib/docs/recheck' },
  { name: 'deliver', schema: SCHEMA, mutating: false, ends_run: 'succeeded' },
];

const DOC = { workspace: 'content', path: '/articles/a' };
const REV = { value: 'r2', alg: 'raisin.node/1' };
const PRIMARY = { artifact_refs: [{ kind: 'node', locator: DOC, revision: REV, role: 'primary' as const }] };
const proof = (ok: boolean, revision = REV) => ({
  evidence: [{ kind: 'read_back', subject: { locator: DOC, revision }, ok, level: null }],
});

function task(context: AgentLoopContext): RunDriver {
  const driver = new RunDriver();
  driver.start('Write the article.', { mode: 'task', tools: TOOLS, ...context });
  return driver;
}

/** One model turn calling `name`, answered with an envelope carrying `extra`. */
function callAndAnswer(driver: RunDriver, id: string, name: string, extra: Partial<ToolResultEnvelope>) {
  driver.modelTurn(null, [{ call_id: id, name, args: {} }]);
  return driver.toolResult('ok', 'succeeded', extra);
}

const finish = (driver: RunDriver, text = 'The article is written.') => driver.modelTurn(text);
const stateOf = (driver: RunDriver) => driver.state as AgentLoopState;

describe('verified completion', () => {
  it('is off by default: a task reply completes succeeded without evidence, and the state has no ledger', () => {
    const driver = task({});
    callAndAnswer(driver, 'c1', 'write_doc', PRIMARY);
    const done = finish(driver);
    expect(done.effects).toEqual([
      {
        effect_id: expect.any(String),
        kind: 'complete',
        outcome: 'succeeded',
        summary: 'The article is written.',
      },
    ]);
    expect(stateOf(driver).verify).toBeUndefined();
  });

  it('completes succeeded with the artifacts and evidence when ok evidence covers every primary artifact', () => {
    const driver = task({ verify_completion: 'partial' });
    callAndAnswer(driver, 'c1', 'write_doc', PRIMARY);
    callAndAnswer(driver, 'c2', 'read_doc', proof(true));
    const done = finish(driver);
    expect(done.effects).toEqual([
      {
        effect_id: expect.any(String),
        kind: 'complete',
        outcome: 'succeeded',
        summary: 'The article is written.',
        artifacts: PRIMARY.artifact_refs,
        evidence: [{ kind: 'read_back', subject: { locator: DOC, revision: REV }, ok: true }],
      },
    ]);
  });

  it('completes partial and says why when no tool reported evidence', () => {
    const driver = task({ verify_completion: 'partial' });
    callAndAnswer(driver, 'c1', 'write_doc', PRIMARY);
    const done = finish(driver);
    expect(done.effects).toMatchObject([{ kind: 'complete', outcome: 'partial' }]);
    const summary = (done.effects[0] as { summary: string }).summary;
    expect(summary).toBe('Not verified: no tool reported evidence for the result. The article is written.');
  });

  it('does not count evidence that is not ok, nor evidence for another revision of the artifact', () => {
    const failed = task({ verify_completion: 'partial' });
    callAndAnswer(failed, 'c1', 'write_doc', PRIMARY);
    callAndAnswer(failed, 'c2', 'read_doc', proof(false));
    expect(finish(failed).effects).toMatchObject([
      {
        kind: 'complete',
        outcome: 'partial',
        summary: expect.stringContaining('every evidence entry reported ok: false'),
      },
    ]);

    const stale = task({ verify_completion: 'partial' });
    callAndAnswer(stale, 'c1', 'write_doc', PRIMARY);
    callAndAnswer(stale, 'c2', 'read_doc', proof(true, { value: 'r1', alg: 'raisin.node/1' }));
    expect(finish(stale).effects).toMatchObject([
      {
        kind: 'complete',
        outcome: 'partial',
        summary: expect.stringContaining('no ok evidence for 1 artifact(s): /articles/a'),
      },
    ]);
  });

  it('distrusts the evidence of a legacy envelope', () => {
    const driver = task({ verify_completion: 'partial' });
    callAndAnswer(driver, 'c1', 'write_doc', PRIMARY);
    callAndAnswer(driver, 'c2', 'read_doc', { ...proof(true), legacy: true });
    expect(finish(driver).effects).toMatchObject([{ kind: 'complete', outcome: 'partial' }]);
  });

  it('checks a hand-off tool that claims success like a final reply', () => {
    const driver = task({ verify_completion: 'partial' });
    callAndAnswer(driver, 'c1', 'write_doc', PRIMARY);
    const done = callAndAnswer(driver, 'c2', 'deliver', {});
    expect(done.effects).toMatchObject([
      {
        kind: 'complete',
        outcome: 'partial',
        summary: 'Not verified: no tool reported evidence for the result. Ended by deliver: ok',
      },
    ]);
  });

  it('asks the user when configured, completes partial on "accept" and returns to the model otherwise', () => {
    const driver = task({ verify_completion: 'ask_user' });
    callAndAnswer(driver, 'c1', 'write_doc', PRIMARY);
    const asked = finish(driver);
    const ask = driver.expectPending('ask_user');
    expect(asked.effects).toEqual([ask]);
    expect(ask.question).toContain('I could not verify that the task succeeded: no tool reported evidence');
    expect(ask.choices).toEqual(['accept', 'continue']);

    const back = driver.answer('continue');
    expect(back.effects).toMatchObject([{ kind: 'request_model_turn' }]);
    finish(driver, 'Done now.');
    const accepted = driver.answer('accept');
    expect(accepted.effects).toMatchObject([
      {
        kind: 'complete',
        outcome: 'partial',
        summary: 'Accepted by the user without verification. Done now.',
      },
    ]);
  });

  it('calls the verifier tool when the evidence so far does not prove the claim, and completes succeeded on its ok evidence', () => {
    const driver = task({ verifier_tool: 'recheck' });
    callAndAnswer(driver, 'c1', 'write_doc', PRIMARY);
    const checking = finish(driver);
    const verifier = driver.expectPending('call_tool');
    expect(checking.effects).toEqual([verifier]);
    expect(verifier).toMatchObject({
      tool: '/lib/docs/recheck',
      args: { summary: 'The article is written.', artifacts: PRIMARY.artifact_refs },
      mutating: false,
    });
    expect(verifier.for_call_id).toBeUndefined();
    expect(checking.projection?.summary).toBe('Verifying the result');

    const done = driver.toolResult({ checked: 1 }, 'succeeded', proof(true));
    expect(done.effects).toMatchObject([
      {
        kind: 'complete',
        outcome: 'succeeded',
        summary: 'The article is written.',
        artifacts: PRIMARY.artifact_refs,
      },
    ]);
  });

  it('completes partial, naming the verifier, when the verifier reports evidence that is not ok', () => {
    const driver = task({ verifier_tool: 'recheck' });
    callAndAnswer(driver, 'c1', 'write_doc', PRIMARY);
    finish(driver);
    const done = driver.toolResult({}, 'succeeded', proof(false));
    expect(done.effects).toMatchObject([
      {
        kind: 'complete',
        outcome: 'partial',
        summary:
          'Not verified: the verifier recheck reported evidence that is not ok. The article is written.',
      },
    ]);
  });

  it('re-issues a verifier that failed retryably, then completes partial when retries run out', () => {
    const driver = task({ verifier_tool: 'recheck', max_retries: 1 });
    callAndAnswer(driver, 'c1', 'write_doc', PRIMARY);
    finish(driver);
    const again = driver.fail('transient', true, false);
    expect(again.effects).toMatchObject([{ kind: 'call_tool', tool: '/lib/docs/recheck' }]);
    const done = driver.fail('transient', true, false, 'still down');
    expect(done.effects).toMatchObject([
      {
        kind: 'complete',
        outcome: 'partial',
        summary: expect.stringContaining('the verifier recheck failed (transient: still down)'),
      },
    ]);
  });

  it('asks the model again instead of completing when the user steered during verification', () => {
    const driver = task({ verifier_tool: 'recheck' });
    callAndAnswer(driver, 'c1', 'write_doc', PRIMARY);
    finish(driver);
    expect(driver.steer('also add a title').effects).toEqual([]);
    const next = driver.toolResult({}, 'succeeded', proof(true));
    expect(next.effects).toMatchObject([{ kind: 'request_model_turn' }]);
  });

  it('ignores a verifier_tool that is not one of the tools, with a warning', () => {
    const driver = new RunDriver();
    const started = driver.start('go', { mode: 'task', tools: TOOLS, verifier_tool: 'nope' });
    expect(started.diagnostics).toMatchObject([{ code: 'context_invalid', severity: 'warning' }]);
    expect(stateOf(driver).verify).toBeUndefined();
  });
});
