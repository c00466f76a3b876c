/**
 * `agent-runs lease <run>`: who holds a run's lease, at which epoch, until when; the operation
 * in flight and what waits for the holder (queued steers, open requests). For client-driven
 * runs above all (GET /runs/{id}/lease). docs/contracts/run-lifecycle.md, "Leases".
 */
import type { LeaseView } from '../../lib/client/client-driven.ts';
import { isTerminalStatus } from '../../lib/contracts/names.ts';
import type { CommandModule } from './context.ts';

/** What an unleased run waits for: a client, a step of the server, or nothing once it ended. */
function unleased(view: LeaseView): string {
  if (isTerminalStatus(view.status)) return 'none (the run ended)';
  return view.client_driven ? 'none (the run waits for a client)' : 'none';
}

/** The lease view as a few aligned lines. */
export function formatLease(view: LeaseView): string {
  const lease =
    view.lease === null
      ? unleased(view)
      : `held by ${view.lease.owner}, ${
          (view.expires_in_ms ?? 0) > 0
            ? `expires in ${((view.expires_in_ms ?? 0) / 1000).toFixed(1)} s`
            : `expired ${(-(view.expires_in_ms ?? 0) / 1000).toFixed(1)} s ago`
        }`;
  const op = view.operation;
  return [
    `run        ${view.run_id} (${view.client_driven ? 'client-driven' : 'server-driven'})`,
    `status     ${view.status}`,
    `lease      ${lease}`,
    `epoch      ${view.epoch} (raised each time the lease changes hands; a write under an older one is refused)`,
    `operation  ${op === null ? 'none' : `${op.op_id} ${op.kind} attempt ${op.attempt}${op.replay_safe ? ' replay-safe' : ''}`}`,
    `steers     ${view.queued_steers} queued`,
    `requests   ${view.open_requests} open`,
  ].join('\n');
}

export const leaseCommand: CommandModule = {
  name: 'lease',
  register(program, ctx) {
    program
      .command('lease <run>')
      .description("show who holds a run's lease (client-driven runs), its epoch and expiry")
      .action(async (runId: string, _opts: unknown, cmd) => {
        const view = await ctx.client(cmd).getLease(runId);
        ctx.print(cmd, () => formatLease(view), view);
      });
  },
};
