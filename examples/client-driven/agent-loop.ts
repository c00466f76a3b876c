/**
 * Drive a run from your own agent loop: the loop (here a few lines of plain TypeScript around an
 * OpenAI-compatible chat completions endpoint) keeps its own transcript and calls its own tools;
 * the runtime keeps the durable, fenced bookkeeping: the lease, each operation with its
 * op_id, usage against the budgets, stops and steers.
 *
 *   AGENT_RUNS_URL=... AGENT_RUNS_TOKEN=... npx node examples/client-driven/agent-loop.ts "What is 2 + 3?"
 *
 * With `npm start` running, the URL and token come from `.agent-runs/local.json`. The model is
 * OPENAI_BASE_URL + OPENAI_MODEL (+ OPENAI_API_KEY) when set; otherwise the example starts a
 * scripted OpenAI-compatible server on 127.0.0.1 that first asks for the `add` tool, then
 * answers with its result. It prints the run id, each step and the final status as JSON lines:
 * the run's status and outcome (how the run ended), and `loop_ended` (why the loop stopped).
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createClient, drive } from '../../lib/client/index.ts';
import { readLocalState } from '../../lib/client/node.ts';

type ChatMessage =
  | { role: 'system' | 'user'; content: string }
  | { role: 'assistant'; content: string | null; tool_calls?: OpenAiToolCall[] }
  | { role: 'tool'; tool_call_id: string; content: string };
interface OpenAiToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

/** The loop's own tools: name → function. */
const TOOLS: Record<string, (args: Record<string, unknown>) => unknown> = {
  add: (args) => ({ sum: Number(args.a) + Number(args.b) }),
};
const TOOL_SPECS = [
  {
    type: 'function',
    function: {
      name: 'add',
      description: 'Adds two numbers.',
      parameters: {
        type: 'object',
        properties: { a: { type: 'number' }, b: { type: 'number' } },
        required: ['a', 'b'],
      },
    },
  },
];

/** A scripted OpenAI-compatible endpoint: a tool call first, then the answer with the tool's result. */
async function scriptedModel(): Promise<{ url: string; close: () => void }> {
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      const { messages } = JSON.parse(body) as { messages: ChatMessage[] };
      const tool = messages.find((m): m is Extract<ChatMessage, { role: 'tool' }> => m.role === 'tool');
      const message = tool
        ? {
            role: 'assistant',
            content: `The answer is ${(JSON.parse(tool.content) as { sum: number }).sum}.`,
          }
        : {
            role: 'assistant',
            content: null,
            tool_calls: [
              { id: 'call_1', type: 'function', function: { name: 'add', arguments: '{"a":2,"b":3}' } },
            ],
          };
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          choices: [{ index: 0, message, finish_reason: tool ? 'stop' : 'tool_calls' }],
          usage: { prompt_tokens: 12, completion_tokens: 7 },
        }),
      );
    });
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    close: () => server.close(),
  };
}

async function main(): Promise<void> {
  const question = process.argv[2] ?? 'What is 2 + 3?';
  const local = readLocalState();
  const baseUrl = process.env.AGENT_RUNS_URL ?? local?.url;
  const token = process.env.AGENT_RUNS_TOKEN ?? local?.token;
  if (baseUrl === undefined) throw new Error('set AGENT_RUNS_URL and AGENT_RUNS_TOKEN, or run `npm start`');
  const scripted = process.env.OPENAI_BASE_URL === undefined ? await scriptedModel() : null;
  const modelUrl = process.env.OPENAI_BASE_URL ?? scripted?.url ?? '';
  const print = (line: Record<string, unknown>) => process.stdout.write(`${JSON.stringify(line)}\n`);

  const client = createClient({ baseUrl, ...(token !== undefined ? { token } : {}) });
  // No reducer: this run is client-driven.
  const { run } = await client.createRun({
    subject: { workspace: 'examples', path: `/client-driven/${Date.now()}` },
    input: question,
    budgets: { max_turns: 5 },
  });
  print({ run_id: run.run_id, status: run.status });

  const messages: ChatMessage[] = [{ role: 'user', content: question }];
  const result = await drive(client, run.run_id, async (session) => {
    for (let turn = 0; turn < 5 && !session.signal.aborted; turn += 1) {
      for (const steer of await session.steers()) messages.push({ role: 'user', content: String(steer) });
      let reply: Extract<ChatMessage, { role: 'assistant' }> = { role: 'assistant', content: null };
      // A model turn: replay-safe, interruptible (a stop aborts the request).
      const turnReport = await session.operation({ kind: 'model_turn' }, async (signal) => {
        const response = await fetch(`${modelUrl}/chat/completions`, {
          method: 'POST',
          signal,
          headers: {
            'content-type': 'application/json',
            ...(process.env.OPENAI_API_KEY ? { authorization: `Bearer ${process.env.OPENAI_API_KEY}` } : {}),
          },
          body: JSON.stringify({
            model: process.env.OPENAI_MODEL ?? 'scripted',
            messages,
            tools: TOOL_SPECS,
          }),
        });
        const body = (await response.json()) as {
          choices: { message: Extract<ChatMessage, { role: 'assistant' }>; finish_reason: string }[];
          usage?: { prompt_tokens?: number; completion_tokens?: number };
        };
        const choice = body.choices[0];
        if (choice === undefined) throw new Error('the model answered no choice');
        reply = choice.message;
        return {
          result: {
            kind: 'model_turn_completed',
            message: { text: reply.content },
            tool_calls: (reply.tool_calls ?? []).map((c) => ({
              call_id: c.id,
              name: c.function.name,
              args: JSON.parse(c.function.arguments) as Record<string, unknown>,
            })),
            finish_reason: choice.finish_reason,
            usage: {
              input_tokens: body.usage?.prompt_tokens ?? 0,
              output_tokens: body.usage?.completion_tokens ?? 0,
            },
          },
        };
      });
      if (turnReport === null) return; // a budget paused the run
      messages.push(reply);
      print({ step: 'model_turn', text: reply.content, tool_calls: reply.tool_calls?.length ?? 0 });
      if (reply.tool_calls === undefined || reply.tool_calls.length === 0) {
        await session.complete(reply.content ?? '');
        return;
      }
      for (const call of reply.tool_calls) {
        const args = JSON.parse(call.function.arguments) as Record<string, unknown>;
        let output: unknown;
        await session.operation(
          {
            kind: 'tool_call',
            replay_safe: true,
            request: { tool: call.function.name, args, mutating: false, call_id: call.id },
          },
          async () => {
            const fn = TOOLS[call.function.name];
            output = fn === undefined ? { error: `no tool ${call.function.name}` } : fn(args);
            return {
              result: {
                kind: 'tool_result',
                envelope: {
                  envelope: 'raisin.tool-result/1',
                  status: fn ? 'succeeded' : 'failed',
                  payload: output,
                },
              },
            };
          },
        );
        messages.push({ role: 'tool', tool_call_id: call.id, content: JSON.stringify(output) });
        print({ step: 'tool_call', tool: call.function.name, output });
      }
    }
  });
  scripted?.close();
  // How the run ended (its status and outcome), then why the loop stopped: `returned` (the loop
  // function returned), `lease_lost` or `stopped`: two different things, named apart.
  const outcome = result.run.status === 'completed' ? { outcome: result.run.outcome } : {};
  print({
    run_id: run.run_id,
    status: result.run.status,
    ...outcome,
    loop_ended: result.ended,
    usage: result.run.usage,
  });
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
