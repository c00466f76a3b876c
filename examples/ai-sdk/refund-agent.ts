/**
 * A small Vercel AI SDK agent with two tools, made durable on Agent Runs by three lines (marked
 * `durable:`): `lookup_order` is replay-safe (a read), `issue_refund` is not (it appends to a
 * ledger, the side effect) and needs an approval (the AI SDK's `needsApproval`). Kill the process
 * at any point and start it again with the same key: it resumes the same run, replays what was
 * recorded without calling the model or a tool again, and never issues the refund twice; a
 * refund that was started but not recorded reaches the model as an `outcome_unknown` tool error
 * instead. The refund waits in the run for an approval (killed while waiting, the restart waits
 * for the same request); a rejected refund is not issued and the model says so.
 *
 *   npm start                                                   # in one terminal
 *   npx node examples/ai-sdk/refund-agent.ts refund-order-42    # the key; run it again after a kill
 *   npx agent-runs runs get RUN                                 # waiting for approval ...: the approve command
 *
 * The model is scripted (`MockLanguageModelV4` from `ai/test`): no network, no API key. Env:
 * `AGENT_RUNS_URL` / `AGENT_RUNS_TOKEN` (default: the local stack's `.agent-runs/local.json`),
 * `REFUND_LEDGER` (the ledger file, default `.agent-runs/refund-ledger.jsonl`), `MODEL_LOG` (a file
 * each real model call appends a line to), `SLOW_TOOL` (`lookup_order` or `issue_refund`: that
 * tool takes a minute after its effect, time to kill the process), `AGENT_RUNS_LEASE_MS` (the
 * lease, default 10 000). Prints JSON lines: the run id, each tool run, the outcome.
 */
import { appendFileSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { generateText, jsonSchema, stepCountIs, tool, wrapLanguageModel } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import { durableAgent } from '../../lib/ai-sdk/index.ts';
import { createClient } from '../../lib/client/index.ts';
import { readLocalState } from '../../lib/client/node.ts';

const key = process.argv[2] ?? 'refund-order-42';
const ledger = process.env.REFUND_LEDGER ?? '.agent-runs/refund-ledger.jsonl';
const print = (line: Record<string, unknown>) => process.stdout.write(`${JSON.stringify(line)}\n`);
const append = (file: string, line: Record<string, unknown>) => {
  mkdirSync(dirname(file), { recursive: true });
  appendFileSync(file, `${JSON.stringify(line)}\n`);
};

type Prompt = Parameters<MockLanguageModelV4['doGenerate']>[0]['prompt'];
const usage = (input: number, output: number) => ({
  inputTokens: { total: input, noCache: input, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: output, text: output, reasoning: undefined },
});
/** The tool results (and errors) the prompt holds, by tool name. */
function toolOutputs(prompt: Prompt): Map<string, unknown> {
  const out = new Map<string, unknown>();
  for (const message of prompt)
    if (message.role === 'tool')
      for (const part of message.content)
        if (part.type === 'tool-result') out.set(part.toolName, part.output);
  return out;
}
/** A scripted model: look the order up, refund it, then answer with what the tools said. */
const model = new MockLanguageModelV4({
  doGenerate: async ({ prompt }) => {
    const seen = toolOutputs(prompt);
    if (process.env.MODEL_LOG) append(process.env.MODEL_LOG, { model_call: seen.size + 1, key });
    const call = (toolName: string, input: unknown) => ({
      content: [
        {
          type: 'tool-call' as const,
          toolCallId: `call_${toolName}`,
          toolName,
          input: JSON.stringify(input),
        },
      ],
      finishReason: { unified: 'tool-calls' as const, raw: 'tool_calls' },
      usage: usage(20, 8),
      warnings: [],
    });
    if (!seen.has('lookup_order')) return call('lookup_order', { order_id: '42' });
    if (!seen.has('issue_refund')) return call('issue_refund', { order_id: '42', amount_cents: 3000 });
    const refund = JSON.stringify(seen.get('issue_refund'));
    const text = refund.includes('outcome_unknown')
      ? 'The refund for order 42 may or may not have gone through; a person must check the ledger.'
      : refund.includes('approval_denied')
        ? 'The refund for order 42 was not approved; nothing was refunded.'
        : 'Order 42 was refunded 30.00 EUR.';
    return {
      content: [{ type: 'text', text }],
      finishReason: { unified: 'stop', raw: 'stop' },
      usage: usage(40, 12),
      warnings: [],
    };
  },
});

/** The tool SLOW_TOOL names takes a minute after its effect: time to kill the process while it runs. */
const slow = (name: string) =>
  new Promise((done) => setTimeout(done, process.env.SLOW_TOOL === name ? 60_000 : 0));

const tools = {
  lookup_order: tool({
    description: 'Reads an order.',
    inputSchema: jsonSchema<{ order_id: string }>({
      type: 'object',
      properties: { order_id: { type: 'string' } },
    }),
    execute: async ({ order_id }) => {
      print({ step: 'tool', tool: 'lookup_order' });
      await slow('lookup_order');
      return { order_id, total_cents: 3000, currency: 'EUR', status: 'delivered' };
    },
  }),
  issue_refund: tool({
    description: 'Refunds an order (not replay-safe: each call moves money).',
    needsApproval: true,
    inputSchema: jsonSchema<{ order_id: string; amount_cents: number }>({
      type: 'object',
      properties: { order_id: { type: 'string' }, amount_cents: { type: 'number' } },
    }),
    execute: async ({ order_id, amount_cents }) => {
      append(ledger, { refund: order_id, amount_cents, key, pid: process.pid });
      print({ step: 'tool', tool: 'issue_refund' });
      await slow('issue_refund');
      return { refunded: true, order_id, amount_cents };
    },
  }),
};

const local = readLocalState();
const baseUrl = process.env.AGENT_RUNS_URL ?? local?.url;
const token = process.env.AGENT_RUNS_TOKEN ?? local?.token;
if (baseUrl === undefined) throw new Error('set AGENT_RUNS_URL and AGENT_RUNS_TOKEN, or run `npm start`');
const client = createClient({ baseUrl, ...(token !== undefined ? { token } : {}) });
const prompt = 'Order 42 arrived broken. Refund it.';

// durable: the run is found again by its key after a restart.
const durable = durableAgent({
  client,
  key,
  run: {
    subject: { workspace: 'examples', path: `/ai-sdk/${key}` },
    input: prompt,
    budgets: { max_turns: 6 },
  },
  ttlMs: Number(process.env.AGENT_RUNS_LEASE_MS ?? 10_000),
});
const result = await durable.run(async ({ runId }) => {
  print({ run_id: runId });
  return generateText({
    model: wrapLanguageModel({ model, middleware: durable.middleware }), // durable: each model call is an operation
    tools: durable.tools(tools, { replaySafe: ['lookup_order'] }), // durable: each tool call is an operation
    prompt,
    stopWhen: stepCountIs(6),
  });
});
print({
  run_id: result.runId,
  status: result.run.status,
  text: result.value.text,
  replayed: result.replayed,
  usage: result.run.usage,
});
