/**
 * The run's mode (model/run-mode.ts), read once from its first event (`GET /runs/{id}/events?after=0&limit=1`);
 * null while loading, or for a run that is not the default agent reducer's.
 */
import { useQuery } from '@tanstack/react-query';
import { AGENT_LOOP_PATH } from '../../../lib/reducers/paths.ts';
import { useApi } from '../api.tsx';
import { type RunMode, runModeOf } from '../model/run-mode.ts';

export function useRunMode(runId: string, reducerPath: string | undefined): RunMode | null {
  const { client } = useApi();
  const first = useQuery({
    queryKey: ['run-start', runId],
    queryFn: () => client.events(runId, { after: 0, limit: 1 }),
    staleTime: Number.POSITIVE_INFINITY,
  });
  return runModeOf(first.data?.events[0], reducerPath === AGENT_LOOP_PATH);
}
