/**
 * The Restate side of the peer bench: one service, `agent`, whose handler `run` makes `steps`
 * tool calls, each a `ctx.run` (the result is journaled by the Restate server before the handler
 * goes on). Served as a Restate deployment over HTTP/2 on PORT; prints `ready <port>`.
 * The step log path comes from STEP_LOG. Issue 19.
 */
import * as restate from '@restatedev/restate-sdk';
import { executeStep } from './workload.ts';

const log = process.env.STEP_LOG ?? '';
if (log === '') throw new Error('STEP_LOG is not set');

export const agent = restate.service({
  name: 'agent',
  handlers: {
    run: async (ctx: restate.Context, input: { run: string; steps: number }) => {
      for (let n = 1; n <= input.steps; n += 1) {
        await ctx.run(`step ${n}`, () => executeStep(log, input.run, n));
      }
      return { run: input.run, steps: input.steps };
    },
  },
});

export type Agent = typeof agent;

const port = await restate.serve({ services: [agent], port: Number(process.env.PORT ?? 9080) });
console.log(`ready ${port}`);
