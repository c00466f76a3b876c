/**
 * The console's reading of a reducer check (`POST /admin/reducers/check` for one run): one line
 * for the person about to accept a reducer change.
 */

/** The verdict on one run: agrees (identical), differs (first divergent seq and what), or unknown. */
export interface CheckVerdict {
  agrees: boolean | null;
  text: string;
}

/** The verdict for `runId` in a check answer (`{artifact, runs}`); unknown when the answer lacks it. */
export function checkVerdict(report: Record<string, unknown>, runId: string): CheckVerdict {
  const runs = Array.isArray(report.runs) ? (report.runs as Record<string, unknown>[]) : [];
  const run = runs.find((r) => r.run_id === runId);
  const artifact = report.artifact as { hash?: unknown } | undefined;
  const hash = typeof artifact?.hash === 'string' ? artifact.hash.slice(0, 12) : '?';
  if (run === undefined) return { agrees: null, text: 'the check did not report this run' };
  if (run.result === 'identical') {
    return {
      agrees: true,
      text: `the new reducer (${hash}) agrees on all ${String(run.deliveries)} decisions`,
    };
  }
  if (run.result === 'diverged') {
    const diff = Array.isArray(run.diff) && typeof run.diff[0] === 'string' ? `: ${run.diff[0]}` : '';
    return {
      agrees: false,
      text: `the new reducer (${hash}) decides differently at event #${String(run.event_seq)}${diff}`,
    };
  }
  return { agrees: null, text: `not checked: ${String(run.reason ?? run.result)}` };
}
