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

/** Flattens zod issues (or the engine's copy of them) into {path, code, message}. */
export function validationIssues(
  issues: readonly z.core.$ZodIssue[] | readonly unknown[],
): ValidationIssue[] {
  return issues.flatMap((raw) => {
    const issue = raw as { path?: readonly PropertyKey[]; code?: unknown; message?: unknown; keys?: unknown };
    const path = (issue.path ?? []).map((p) => String(p));
    // An unknown field (a typo such as budget_incrase) is named by its own path.
    if (issue.code === 'unrecognized_keys' && Array.isArray(issue.keys) && issue.keys.length > 0) {
      return issue.keys.map((key) => ({
        path: [...path, String(key)].join('.'),
        code: 'unrecognized_key',
        message: `unknown field ${JSON.stringify(String(key))}`,
      }));
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
