/**
 * Properties of the one tool-result normalizer (lib/core normalizeToolResult) over random tool
 * answers: any JSON value, and envelopes built from every field with valid, null, absent and
 * wrong values. docs/contracts/tool-result.md, "The tool-result envelope".
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { TOOL_RESULT_ENVELOPE, ToolResultEnvelope } from '../../lib/contracts/index.ts';
import { normalizeToolResult } from '../../lib/core/tool-result-validation.ts';

const RUNS = 400;

const locator = fc.record(
  {
    workspace: fc.constantFrom('content', 'ai'),
    path: fc.constantFrom('/a', '/b'),
    node_id: fc.constant(null),
  },
  { requiredKeys: [] },
);
const revision = fc.record(
  { value: fc.constantFrom('r1', 'r2'), alg: fc.constantFrom('raisin.node/1', '', null) },
  { requiredKeys: ['value'] },
);
const optional = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { nil: null });

/** An object that claims the envelope: every field valid, null, absent, or (sometimes) wrong. */
const claim = fc.record(
  {
    envelope: fc.constantFrom(TOOL_RESULT_ENVELOPE, TOOL_RESULT_ENVELOPE, 'raisin.tool-result/2'),
    operation_id: optional(fc.constantFrom('op_tool')),
    status: fc.constantFrom('succeeded', 'waiting', 'retryable', 'blocked', 'failed', 'done'),
    resume_key: optional(fc.constantFrom('', 'cb:1')),
    writes: optional(
      fc.array(fc.record({ locator, action: fc.constantFrom('created', 'moved') }), { maxLength: 2 }),
    ),
    artifact_refs: optional(
      fc.array(fc.record({ kind: fc.constant('node'), role: fc.constantFrom('primary', 'supporting') }), {
        maxLength: 2,
      }),
    ),
    evidence: optional(
      fc.array(
        fc.record({
          kind: fc.constant('read_back'),
          subject: optional(fc.record({ revision: optional(revision) })),
        }),
        { maxLength: 2 },
      ),
    ),
    diagnostics: optional(
      fc.array(
        fc.record({
          code: fc.constant('c'),
          severity: fc.constantFrom('error', 'info', 'loud'),
          class: optional(fc.constantFrom('blocking', 'transient')),
          message: fc.constant('m'),
        }),
        { maxLength: 2 },
      ),
    ),
    legacy: optional(fc.boolean()),
    payload: fc.jsonValue({ maxDepth: 2 }),
  },
  { requiredKeys: ['envelope'] },
);
const answer = fc.oneof(claim, fc.jsonValue({ maxDepth: 3 }));

describe('normalizeToolResult over random tool answers', () => {
  it('always answers a valid envelope with the runtime operation id, and never throws', () => {
    fc.assert(
      fc.property(answer, (raw) => {
        const { envelope } = normalizeToolResult(raw, 'op_run');
        expect(ToolResultEnvelope.safeParse(envelope).success).toBe(true);
        expect(envelope.operation_id).toBe('op_run');
      }),
      { numRuns: RUNS },
    );
  });

  it('gives back an envelope it returned unchanged (so a second normalizer on the way changes nothing)', () => {
    fc.assert(
      fc.property(answer, (raw) => {
        const once = normalizeToolResult(raw, 'op_run').envelope;
        expect(normalizeToolResult(once, 'op_run')).toStrictEqual({ envelope: once });
      }),
      { numRuns: RUNS },
    );
  });

  it('lets writes or evidence into the envelope only from an accepted claim, marked legacy if it said so', () => {
    fc.assert(
      fc.property(answer, (raw) => {
        const { envelope, refusal } = normalizeToolResult(raw, 'op_run');
        const carries = envelope.writes.length + envelope.evidence.length > 0;
        if (refusal !== undefined) {
          expect(envelope).toMatchObject({ status: 'failed', writes: [], evidence: [] });
          expect(envelope.diagnostics[0]?.code).toBe(refusal.code);
        }
        if (carries) {
          expect(refusal).toBeUndefined();
          expect((raw as { envelope?: unknown }).envelope).toBe(TOOL_RESULT_ENVELOPE);
          expect(envelope.legacy === true).toBe((raw as { legacy?: unknown }).legacy === true);
        }
      }),
      { numRuns: RUNS },
    );
  });
});
