// Type-checks the installed package's declarations (run by bin/client-package-check.ts).
import {
  type AgentRunsClient,
  ApiError,
  type CreateRunInput,
  createClient,
  type RunRecord,
} from '@agent-runs/client';

const client: AgentRunsClient = createClient({ baseUrl: 'http://127.0.0.1:8787', token: 't' });
const input: CreateRunInput = { subject: { workspace: 'w', path: '/p' }, reducer: null };
export async function first(): Promise<RunRecord['status'] | string> {
  try {
    return (await client.createRun(input)).run.status;
  } catch (error) {
    return error instanceof ApiError ? error.code : 'unknown';
  }
}
