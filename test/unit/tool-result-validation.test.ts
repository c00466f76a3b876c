import { describe, expect, it } from 'vitest';
import { TOOL_RESULT_ENVELOPE, ToolResultEnvelope } from '../../lib/contracts/index.ts';
import { normalizeToolResult, validateToolResult } from '../../lib/core/tool-result-validation.ts';

const revision = { value: 'r42', alg: 'raisin.node/1' };
const locator = { workspace: 'content', path: '/articles/b' };

/** A succeeded result of a move, with its primary artifact and read-back evidence. */
function envelope(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    envelope: TOOL_RESULT_ENVELOPE,
    operation_id: 'op_tool',
    status: 'succeeded',
    reads: [
      { read_id: 'content:/articles/a', locator: { workspace: 'content', path: '/articles/a' }, revision },
    ],
    writes: [{ locator, action: 'moved', from: { workspace: 'content', path: '/articles/a' }, revision }],
    artifact_refs: [{ kind: 'node', locator, revision, role: 'primary' }],
    evidence: [{ kind: 'read_back', subject: { locator, revision }, ok: true, level: null }],
    payload: { moved: true },
    ...overrides,
  };
}

function codeOf(raw: unknown): string {
  const result = validateToolResult(raw);
  return result.ok ? 'ok' : result.code;
}

describe('validateToolResult', () => {
  it('accepts a complete envelope and returns it decoded with defaults', () => {
    const result = validateToolResult(envelope());
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(result.envelope.diagnostics).toEqual([]);
    expect(result.envelope.suggested_next_actions).toEqual([]);
    expect(result.envelope.payload).toEqual({ moved: true });
  });

  it('ignores unknown fields (growth rule)', () => {
    const result = validateToolResult(envelope({ future: 1 }));
    expect(result.ok && result.envelope).not.toHaveProperty('future');
  });

  describe('envelope_mismatch', () => {
    it.each([
      ['another envelope version', envelope({ envelope: 'raisin.tool-result/2' })],
      ['a legacy value without envelope field', { rows: [1, 2] }],
      ['a primitive', 'done'],
      ['null', null],
      ['an array', [envelope()]],
    ])('refuses %s', (_label, raw) => {
      expect(codeOf(raw)).toBe('envelope_mismatch');
    });

    it.each([
      ['an unknown status', { status: 'done' }, 'status'],
      ['a write action outside the 4', { writes: [{ locator, action: 'renamed' }] }, 'writes.0.action'],
      [
        'a read revision without alg',
        { reads: [{ read_id: 'r', revision: { value: 'v' } }] },
        'reads.0.revision.alg',
      ],
      ['an unknown error class', { status: 'failed', error_class: 'oops' }, 'error_class'],
    ])('refuses a claimed envelope that does not decode: %s', (_label, overrides, path) => {
      const result = validateToolResult(envelope(overrides));
      expect(result).toMatchObject({ ok: false, code: 'envelope_mismatch' });
      expect(result.ok || result.message).toContain(path);
    });
  });

  describe('waiting_without_resume_key', () => {
    it('refuses a waiting result without resume_key', () => {
      expect(codeOf(envelope({ status: 'waiting', writes: [] }))).toBe('waiting_without_resume_key');
    });

    it('accepts a waiting result with a resume_key', () => {
      expect(codeOf(envelope({ status: 'waiting', resume_key: 'child:run_2' }))).toBe('ok');
    });
  });

  describe('writes_without_primary', () => {
    it.each([
      ['no artifact_refs', []],
      ['only a supporting artifact', [{ kind: 'node', role: 'supporting' }]],
      [
        'two primaries',
        [
          { kind: 'node', role: 'primary' },
          { kind: 'node', role: 'primary' },
        ],
      ],
    ])('refuses a succeeded result with writes and %s', (_label, artifactRefs) => {
      expect(codeOf(envelope({ artifact_refs: artifactRefs }))).toBe('writes_without_primary');
    });

    it('accepts exactly one primary among other roles', () => {
      const refs = [
        { kind: 'node', role: 'dependency' },
        { kind: 'node', role: 'primary' },
        { kind: 'node', role: 'supporting' },
      ];
      expect(codeOf(envelope({ artifact_refs: refs }))).toBe('ok');
    });

    it('does not apply to legacy results, to other statuses, or without writes', () => {
      expect(codeOf(envelope({ artifact_refs: [], legacy: true }))).toBe('ok');
      expect(codeOf(envelope({ artifact_refs: [], status: 'failed' }))).toBe('ok');
      expect(codeOf(envelope({ artifact_refs: [], status: 'blocked' }))).toBe('ok');
      expect(codeOf(envelope({ artifact_refs: [], writes: [] }))).toBe('ok');
    });
  });

  describe('evidence_revision_without_alg', () => {
    it.each([
      ['missing', { value: 'r42' }],
      ['empty', { value: 'r42', alg: '' }],
    ])('refuses evidence whose subject revision alg is %s', (_label, rev) => {
      const result = validateToolResult(
        envelope({ evidence: [{ kind: 'checksum', subject: { locator, revision: rev } }] }),
      );
      expect(result).toMatchObject({ ok: false, code: 'evidence_revision_without_alg' });
      expect(result.ok || result.message).toContain('evidence.0.subject.revision');
    });

    it('accepts evidence without a subject or without a subject revision', () => {
      expect(codeOf(envelope({ evidence: [{ kind: 'note', subject: { locator } }] }))).toBe('ok');
      expect(codeOf(envelope({ evidence: [{ kind: 'note' }] }))).toBe('ok');
    });
  });

  it.each([
    ['envelope_mismatch', envelope({ envelope: 'raisin.tool-result/2' }), 'envelope'],
    [
      'envelope_mismatch',
      envelope({ diagnostics: [{ code: 'c', severity: 'loud', message: 'm' }] }),
      'diagnostics.0.severity',
    ],
    ['envelope_mismatch', 'done', ''],
    ['waiting_without_resume_key', envelope({ status: 'waiting', resume_key: '' }), 'resume_key'],
    ['waiting_without_resume_key', envelope({ status: 'waiting', resume_key: null }), 'resume_key'],
    ['writes_without_primary', envelope({ artifact_refs: null }), 'artifact_refs'],
    [
      'evidence_revision_without_alg',
      envelope({
        evidence: [{ kind: 'a' }, { kind: 'b', subject: { revision: { value: 'v', alg: null } } }],
      }),
      'evidence.1.subject.revision.alg',
    ],
  ])('names the field at fault in a refusal: %s (%#)', (code, raw, path) => {
    expect(validateToolResult(raw)).toMatchObject({ ok: false, code, path });
  });

  it('checks in the documented order: resume_key, then primary, then evidence alg', () => {
    const all = envelope({
      status: 'waiting',
      artifact_refs: [],
      evidence: [{ kind: 'k', subject: { revision: { value: 'v' } } }],
    });
    expect(codeOf(all)).toBe('waiting_without_resume_key');
    expect(codeOf({ ...all, status: 'succeeded' })).toBe('writes_without_primary');
    expect(codeOf({ ...all, status: 'succeeded', artifact_refs: [{ kind: 'n', role: 'primary' }] })).toBe(
      'evidence_revision_without_alg',
    );
  });
});

describe('normalizeToolResult', () => {
  it('wraps a legacy value as a succeeded legacy envelope with the value as payload', () => {
    const raw = { rows: [{ id: 42 }] };
    const { envelope: wrapped, refusal } = normalizeToolResult(raw, 'op_9');
    expect(refusal).toBeUndefined();
    expect(wrapped).toMatchObject({
      envelope: TOOL_RESULT_ENVELOPE,
      status: 'succeeded',
      legacy: true,
      operation_id: 'op_9',
      payload: raw,
    });
    expect(ToolResultEnvelope.safeParse(wrapped).success).toBe(true);
  });

  it('does not trust the writes and evidence of a legacy value: they stay in the payload only', () => {
    const raw = {
      writes: [{ locator, action: 'created' }],
      evidence: [{ kind: 'read_back' }],
      artifact_refs: [],
    };
    const { envelope: wrapped } = normalizeToolResult(raw, 'op_9');
    expect(wrapped.writes).toEqual([]);
    expect(wrapped.evidence).toEqual([]);
    expect(wrapped.artifact_refs).toEqual([]);
    expect(wrapped.payload).toEqual(raw);
  });

  it.each([
    ['a string', 'done'],
    ['a number', 3],
    ['null', null],
    ['an array', [1, 2]],
    ['undefined', undefined],
  ])('wraps %s as a legacy result', (_label, raw) => {
    const { envelope: wrapped, refusal } = normalizeToolResult(raw, 'op_9');
    expect(refusal).toBeUndefined();
    expect(wrapped).toMatchObject({ status: 'succeeded', legacy: true });
    expect(wrapped.payload).toEqual(raw);
  });

  it('returns a valid claimed envelope with the runtime operation id', () => {
    const { envelope: normalized, refusal } = normalizeToolResult(
      envelope({ operation_id: 'op_other' }),
      'op_9',
    );
    expect(refusal).toBeUndefined();
    expect(normalized.operation_id).toBe('op_9');
    expect(normalized.legacy).toBeUndefined();
    expect(normalized.writes).toHaveLength(1);
  });

  it('turns a refused claimed envelope into a failed tool_error envelope carrying the refusal code', () => {
    const raw = envelope({ status: 'waiting' });
    const { envelope: failed, refusal } = normalizeToolResult(raw, 'op_9');
    expect(refusal).toMatchObject({ code: 'waiting_without_resume_key' });
    expect(failed).toMatchObject({
      envelope: TOOL_RESULT_ENVELOPE,
      operation_id: 'op_9',
      status: 'failed',
      error_class: 'tool_error',
      retry_policy: { retryable: false },
      writes: [],
      evidence: [],
      payload: raw,
    });
    expect(failed.diagnostics).toEqual([
      expect.objectContaining({ code: 'waiting_without_resume_key', severity: 'error' }),
    ]);
    expect(ToolResultEnvelope.safeParse(failed).success).toBe(true);
  });

  it('wraps an object whose envelope field is null as legacy (null reads as absent)', () => {
    const raw = { envelope: null, rows: [1] };
    const { envelope: wrapped, refusal } = normalizeToolResult(raw, 'op_9');
    expect(refusal).toBeUndefined();
    expect(wrapped).toMatchObject({ status: 'succeeded', legacy: true, payload: raw, writes: [] });
  });

  it('keeps the mark and the lists of an envelope that says legacy: true itself', () => {
    const raw = envelope({ legacy: true, artifact_refs: [] });
    const { envelope: normalized, refusal } = normalizeToolResult(raw, 'op_9');
    expect(refusal).toBeUndefined();
    expect(normalized).toMatchObject({ legacy: true, status: 'succeeded' });
    expect(normalized.writes).toHaveLength(1);
  });

  it('returns the refusal with its code and field path, and puts the path on the diagnostic', () => {
    const { envelope: failed, refusal } = normalizeToolResult(
      envelope({ evidence: [{ kind: 'k', subject: { revision: { value: 'v' } } }] }),
      'op_9',
    );
    expect(refusal).toMatchObject({
      code: 'evidence_revision_without_alg',
      path: 'evidence.0.subject.revision.alg',
    });
    expect(failed.diagnostics[0]).toMatchObject({
      code: 'evidence_revision_without_alg',
      path: 'evidence.0.subject.revision.alg',
      class: 'blocking',
    });
  });

  it.each([
    ['a legacy value', { rows: [1] }],
    ['an accepted envelope', envelope()],
    ['a refused envelope', envelope({ status: 'waiting' })],
  ])('gives back an envelope it returned unchanged: %s', (_label, raw) => {
    const once = normalizeToolResult(raw, 'op_9').envelope;
    expect(normalizeToolResult(once, 'op_9')).toStrictEqual({ envelope: once });
  });

  it('treats an object with any envelope field as a claim, refused as envelope_mismatch', () => {
    const { envelope: failed, refusal } = normalizeToolResult({ envelope: 'other/1', data: 1 }, 'op_9');
    expect(refusal?.code).toBe('envelope_mismatch');
    expect(failed.status).toBe('failed');
    expect(failed.diagnostics[0]?.code).toBe('envelope_mismatch');
  });
});
