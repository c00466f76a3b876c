/**
 * The details of a `validation_failed` answer, `{target, issues}`, and its message: zod issues
 * flattened to `{path, code, message}`, and the sentence naming where the first one is
 * (`invalid request: query parameter limit: ...`). Shared by the API (lib/http/errors.ts) and the
 * client, which refuses a call its parameters would fail with these same words. No zod at run
 * time (types only), browser-safe. See docs/reference/errors.md.
 */
import type { z } from 'zod';

/** One validation problem: `path` is dotted (`subject.path`, `budgets.max_turns`, `0.kind`), '' for the whole value. */
export interface ValidationIssue {
  path: string;
  code: string;
  message: string;
}

/**
 * Unknown fields that have a documented near neighbour, by dotted path: what the message adds.
 * The model turn result is the client-driven guide's (docs/guides/client-driven.md).
 */
const UNKNOWN_FIELD_HINTS: Readonly<Record<string, string>> = {
  'result.text': "a model turn's text goes in result.message.text",
  'result.content': "a model turn's text goes in result.message.text",
  'result.input_tokens': 'token counts go in result.usage (input_tokens, output_tokens)',
  'result.output_tokens': 'token counts go in result.usage (input_tokens, output_tokens)',
};

/**
 * Flattens zod issues (or the engine's copy of them) into {path, code, message}. An unknown
 * field is named by its own path, with a hint where UNKNOWN_FIELD_HINTS knows its neighbour.
 */
export function validationIssues(
  issues: readonly z.core.$ZodIssue[] | readonly unknown[],
): ValidationIssue[] {
  return issues.flatMap((raw) => {
    const issue = raw as { path?: readonly PropertyKey[]; code?: unknown; message?: unknown; keys?: unknown };
    const path = (issue.path ?? []).map((p) => String(p));
    // An unknown field (a typo such as budget_incrase) is named by its own path.
    if (issue.code === 'unrecognized_keys' && Array.isArray(issue.keys) && issue.keys.length > 0) {
      return issue.keys.map((key) => {
        const at = [...path, String(key)].join('.');
        const hint = UNKNOWN_FIELD_HINTS[at];
        return {
          path: at,
          code: 'unrecognized_key',
          message: `unknown field ${JSON.stringify(String(key))}${hint === undefined ? '' : `; ${hint}`}`,
        };
      });
    }
    // A custom rule's own code (e.g. too_large) rather than zod's `custom`.
    const own = issue.code === 'custom' ? (issue as { params?: { code?: unknown } }).params?.code : undefined;
    return [
      {
        path: path.join('.'),
        code: typeof own === 'string' ? own : String(issue.code ?? 'invalid'),
        message: String(issue.message ?? 'invalid value'),
      },
    ];
  });
}

/** How a validation message names the part of the request that failed, whole or one field of it. */
const TARGET_WORDS: Record<string, { whole: string; field: string }> = {
  json: { whole: 'the body', field: 'field' },
  query: { whole: 'the query', field: 'query parameter' },
  param: { whole: 'the path', field: 'path parameter' },
  header: { whole: 'the headers', field: 'header' },
};

/** `invalid request: <where>: <why>` for the first of `issues` of `target` (json, query, param, header). */
export function validationMessage(target: string, issues: readonly ValidationIssue[]): string {
  const first = issues[0];
  const part = TARGET_WORDS[target] ?? { whole: target, field: target };
  const where = first === undefined || first.path === '' ? part.whole : `${part.field} ${first.path}`;
  return `invalid request: ${where}${first === undefined ? '' : `: ${first.message}`}`;
}
