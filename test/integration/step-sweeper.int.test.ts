/**
 * The sweeper handler (lib/handlers/sweeper.ts, behind functions/sweeper.ts) on DynamoDB Local
 * and fauxqs: two passes a short gap apart (SWEEP_PASS_GAP_MS in Lambda), the takeover of a dead
 * worker's lease, and the step handler finishing the run from the wake-up the sweeper sent.
 * docs/architecture.md, "The sweeper".
 */
import { ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { LEASE_TTL_MS } from '../../lib/core/run-machine.ts';
import { defaultClockSkewMs } from '../../lib/core/sweeper.ts';
import { createCountingMetrics, SILENT_LOG } from '../../lib/handlers/observability.ts';
import { createStepBatchHandler } from '../../lib/handlers/step-batch.ts';
import { createSweeperHandler } from '../../lib/handlers/sweeper.ts';
import { toRecord } from '../../lib/local/poller.ts';
import {
  alice,
  inProcessReducers,
  inProcessTools,
  makeTestEngine,
  scriptedModel,
  uniqueSubject,
} from '../support/engine.ts';
import { scopedStore, shardOfRun } from '../support/faults.ts';
import { toolLoop } from '../support/reducers.ts';

const noModel = scriptedModel(async () => ({ error_class: 'unsupported', message: 'no model' }));

describe('sweeper handler', () => {
  it('takes over a dead worker’s expired lease in its first pass, makes a second pass after the gap, and the run then completes', async () => {
    // Prepare: a worker dies right after taking the lease; the clock moves past the lease TTL.
    let killed = false;
    const t = await makeTestEngine({
      reducers: inProcessReducers({ '/r/loop': toolLoop(1) }),
      tools: inProcessTools({ lookup: async () => ({}) }),
      models: noModel,
    });
    const store = scopedStore(t.store);
    const dying = t.another({
      store,
      faults: (point) => {
        if (point === 'after_lease_acquire' && !killed) {
          killed = true;
          throw new Error('worker killed');
        }
      },
    });
    const engine = t.another({ store });
    const { run } = await dying.createRun(
      { subject: uniqueSubject(), reducer: { function_path: '/r/loop' }, input: 'x' },
      alice,
    );
    await t.drainMessages();
    await expect(dying.stepRun(run.run_id)).rejects.toThrow('worker killed');
    const orphaned = await store.getRun(run.run_id);
    t.clock.advance(LEASE_TTL_MS + defaultClockSkewMs(LEASE_TTL_MS) + 1_000);
    const metrics = createCountingMetrics();
    const sweeper = createSweeperHandler({ engine, logger: SILENT_LOG, metrics, passGapMs: 150 });

    // Act: the scheduler's invocation, limited to the run's shard.
    const started = performance.now();
    const result = await sweeper({ shards: shardOfRun(run.run_id) });

    // Assess: two passes, the gap between them; the takeover in the first; epoch bumped, lease gone.
    expect(performance.now() - started).toBeGreaterThanOrEqual(150);
    expect(result.passes.map((p) => p.taken_over)).toEqual([1, 0]);
    expect(metrics.totals).toMatchObject({ Takeovers: 1 });
    const taken = await store.getRun(run.run_id);
    expect(taken?.lease).toBeNull();
    expect(taken?.epoch).toBeGreaterThan(orphaned?.epoch ?? 0);

    // The takeover's wake-up reaches the step handler, which finishes the run.
    const out = await t.clients.sqs.send(
      new ReceiveMessageCommand({ QueueUrl: t.queue.queueUrl, WaitTimeSeconds: 2, MaxNumberOfMessages: 10 }),
    );
    const records = (out.Messages ?? []).map((m) =>
      toRecord(m, 'arn:aws:sqs:us-east-1:000000000000:step', 'us-east-1'),
    );
    expect(records.map((r) => JSON.parse(r.body))).toContainEqual({ run_id: run.run_id });
    const step = createStepBatchHandler({ engine, logger: SILENT_LOG, metrics });
    expect((await step({ Records: records })).batchItemFailures).toEqual([]);
    expect((await engine.getRun(run.run_id, alice)).status).toBe('completed');
  });
});
