/**
 * The replay summary's cost rows (lib/replay/run-replay.ts): the runs' costs summed, per run and
 * per 1M operations, from each run's view (usage.cost).
 */
import { describe, expect, it } from 'vitest';
import { EMPTY_METERED, EMPTY_USAGE } from '../../lib/contracts/index.ts';
import { costOf, DEFAULT_PRICES } from '../../lib/core/prices.ts';
import type { ConversationResult } from '../../lib/replay/driver.ts';
import { costSummary, type ReplaySummary, summaryTable } from '../../lib/replay/run-replay.ts';

/** A judged conversation whose run made `operations` operations and `writeUnits` write units. */
function judged(key: string, operations: number, writeUnits: number): ConversationResult {
  return {
    key,
    run_id: `run-${key}`,
    identical: true,
    status: 'completed',
    expected_status: 'completed',
    model_turns: 0,
    tool_calls: 0,
    approvals: 0,
    answers: 0,
    recoveries: 0,
    outcome_unknown: 0,
    events: 0,
    first_difference: null,
    operations,
    cost: costOf(
      {
        executor_config: { model_turn_function: '/lib/models/recorded' },
        usage: { ...EMPTY_USAGE, operations, input_tokens: 40_000 },
        metered: { ...EMPTY_METERED, dynamodb_write_units: writeUnits, lambda_invocations: 10 },
      },
      DEFAULT_PRICES,
    ),
  };
}

describe('the replay summary of what the runs cost', () => {
  it('sums the runs, per run and per 1M operations, AWS apart from the model', () => {
    const summary = costSummary([
      judged('a', 10, 400),
      judged('b', 30, 1_200),
      { ...judged('c', 5, 1), cost: undefined },
    ]);
    // 40 000 tokens in at $2.50 per 1M: $0.10 a run; 1 600 write units at $0.625 per 1M: $0.001.
    expect(summary).toMatchObject({
      runs: 2,
      operations: 40,
      model_usd: 0.2,
      model: 'gpt-4o',
      aws_lines: { dynamodb_usd: 0.001, lambda_usd: 0.000004, sqs_usd: 0, s3_usd: 0 },
    });
    expect(summary?.aws_usd).toBe(0.001004);
    expect(summary?.aws_per_run_usd).toBe(0.000502);
    expect(summary?.total_usd).toBe(0.201004);
    expect(summary?.per_million_operations_usd).toBe(5025.1);
    expect(summary?.aws_per_million_operations_usd).toBe(25.1);
  });

  it('says the cost was not reported when no run carried one', () => {
    expect(costSummary([{ ...judged('a', 1, 1), cost: undefined }])).toBeNull();
  });

  it('prints cost per run with the date of the prices, and cost per 1M operations', () => {
    const cost = costSummary([judged('a', 10, 400)]);
    const lines = summaryTable({
      conversations: 1,
      identical: 1,
      diverged: 0,
      model_turns: 0,
      tool_calls: 0,
      approvals: 0,
      answers: 0,
      faults_injected: 0,
      recoveries: 0,
      outcome_unknown: 0,
      wall_ms: 1_000,
      operations_per_second: 10,
      chaos: null,
      live: null,
      peak_rss_mb: 100,
      cost,
    } satisfies ReplaySummary).join('\n');
    expect(lines).toMatch(
      new RegExp(
        `\\| cost per run \\(us-east-1 prices of ${DEFAULT_PRICES.as_of}\\) +\\| +\\$0\\.100252 \\(AWS \\$0\\.000252, model gpt-4o\\) \\|`,
      ),
    );
    expect(lines).toMatch(/\| cost per 1M operations +\| +\$10025\.20 \(AWS \$25\.20\) \|/);
  });
});
