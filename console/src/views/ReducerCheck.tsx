/**
 * "Would the new reducer agree?": on a run paused `reducer_changed`, checks the artifact
 * published at the run's path against the run's recorded decisions (`POST /admin/reducers/check`,
 * admin only) and shows the verdict before the change is accepted.
 */
import { useState } from 'react';
import type { PublicRunRecord } from '../../../lib/contracts/index.ts';
import { useApi } from '../api.tsx';
import { type CheckVerdict, checkVerdict } from '../model/reducer-check.ts';

export function ReducerCheckButton({ run }: { run: PublicRunRecord }) {
  const { client } = useApi();
  const [verdict, setVerdict] = useState<CheckVerdict | null>(null);
  const [busy, setBusy] = useState(false);
  const path = run.reducer?.function_path;
  if (path === undefined) return null;

  async function check() {
    setBusy(true);
    try {
      const report = await client.checkReducer({ artifact: { function_path: path }, run_ids: [run.run_id] });
      setVerdict(checkVerdict(report, run.run_id));
    } catch (err) {
      setVerdict({ agrees: null, text: `the check failed: ${(err as Error).message}` });
    } finally {
      setBusy(false);
    }
  }

  return (
    <div className="reducer-check">
      <button type="button" onClick={() => void check()} disabled={busy}>
        {busy ? 'Checking…' : 'Would the new reducer agree?'}
      </button>
      {verdict !== null ? (
        <p className={verdict.agrees === false ? 'error' : 'muted'} role="status">
          {verdict.text}
        </p>
      ) : null}
    </div>
  );
}
