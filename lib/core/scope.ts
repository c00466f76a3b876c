/**
 * Narrowed runs: what a delegation lets its child (and the child's own children) call and write,
 * always a subset of what the parent may (lib/contracts/run.ts RunScope). Pure: the delegation
 * narrows with {@link narrowScope}; the policy gate asks {@link scopeDenial} before any rule.
 */
import type { RunScope, Subject } from '../contracts/index.ts';

/** Deny codes of a call outside its run's scope (policy gate) and of a delegation that widens it. */
export const SCOPE_CODES = {
  toolOutside: 'tool_outside_delegation_scope',
  subjectNotWritable: 'subject_not_writable',
  widened: 'scope_widened',
} as const;

type Writable = NonNullable<RunScope['writable']>[number];

/** Whether `subject` is `area` or lies below it (same workspace; the path itself or under `path/`). */
export function subjectWithin(subject: Pick<Subject, 'workspace' | 'path'>, area: Writable): boolean {
  if (subject.workspace !== area.workspace) return false;
  if (subject.path === area.path) return true;
  const prefix = area.path.endsWith('/') ? area.path : `${area.path}/`;
  return subject.path.startsWith(prefix);
}

/**
 * The scope of a child whose delegation asked for `asked`, under its parent's `parent` scope:
 * each field asked must be covered by the parent's (a tool the parent may call; a subject within
 * one the parent may write); an absent field inherits the parent's. Undefined when neither
 * narrows anything. Refused `scope_widened` naming the first tool or subject outside.
 */
export function narrowScope(
  parent: RunScope | undefined,
  asked: RunScope | undefined,
): { ok: true; scope: RunScope | undefined } | { ok: false; code: 'scope_widened'; message: string } {
  const tools = asked?.tools ?? parent?.tools;
  const writable = asked?.writable ?? parent?.writable;
  const outsideTool =
    parent?.tools === undefined ? undefined : tools?.find((t) => !parent.tools?.includes(t));
  if (outsideTool !== undefined) {
    return { ok: false, code: SCOPE_CODES.widened, message: `the parent may not call ${outsideTool}` };
  }
  const outside =
    parent?.writable === undefined
      ? undefined
      : writable?.find((w) => !parent.writable?.some((area) => subjectWithin(w, area)));
  if (outside !== undefined) {
    const where = `${outside.workspace}:${outside.path}`;
    return { ok: false, code: SCOPE_CODES.widened, message: `the parent may not write ${where}` };
  }
  if (tools === undefined && writable === undefined) return { ok: true, scope: undefined };
  return {
    ok: true,
    scope: { ...(tools !== undefined ? { tools } : {}), ...(writable !== undefined ? { writable } : {}) },
  };
}

/**
 * Why a call of `tool` (mutating or not) by a run of `subject` under `scope` is outside it, or
 * null: a tool not in `scope.tools` → tool_outside_delegation_scope; a mutating call while the
 * run's subject is in none of `scope.writable` → subject_not_writable.
 */
export function scopeDenial(
  scope: RunScope | undefined,
  tool: string,
  mutating: boolean,
  subject: Pick<Subject, 'workspace' | 'path'> | undefined,
): string | null {
  if (scope === undefined) return null;
  if (scope.tools !== undefined && !scope.tools.includes(tool)) return SCOPE_CODES.toolOutside;
  if (mutating && scope.writable !== undefined) {
    const inside = subject !== undefined && scope.writable.some((area) => subjectWithin(subject, area));
    if (!inside) return SCOPE_CODES.subjectNotWritable;
  }
  return null;
}
