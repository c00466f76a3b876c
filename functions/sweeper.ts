/**
 * Lambda: EventBridge Scheduler (every minute) → two sweeper passes SWEEP_PASS_GAP_MS apart
 * (default 30 s). Logic in lib/handlers/sweeper.ts; runtime created once per container.
 * docs/architecture.md, "The sweeper".
 */
import { lambdaContainer } from '../lib/handlers/container.ts';
import { createSweeperHandler, passGapFromEnv } from '../lib/handlers/sweeper.ts';

const container = lambdaContainer('agent-runs-sweeper');
const passGapMs = passGapFromEnv(process.env);

export const handler = createSweeperHandler(() => {
  const { runtime, logger, metrics } = container();
  return { engine: runtime.engine, logger, metrics, passGapMs };
});
