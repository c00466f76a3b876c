/**
 * A stand-in for one warm Lambda container, run as a child process (child_process.fork) by
 * test/integration/bundles.int.test.ts: it imports a bundle's `index.mjs` (what the Lambda
 * runtime loads for handler `index.handler`), then answers each IPC message `{id, event}` with
 * `{id, ok, value}` or `{id, ok: false, error}` after calling `handler(event, context)` with a
 * Lambda-shaped context. The bundle directory comes as argv[2]; the environment is the
 * function's, as the test built it from the synthesized template.
 */
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

type Handler = (event: unknown, context: Record<string, unknown>) => Promise<unknown>;

const dir = process.argv[2];
if (dir === undefined) throw new Error('usage: lambda-container.ts <bundle dir>');
const timeoutMs = Number(process.env.AGENT_RUNS_TEST_TIMEOUT_MS ?? '60000');
const { handler } = (await import(pathToFileURL(join(dir, 'index.mjs')).href)) as { handler: Handler };

process.on('message', async (message: { id: number; event: unknown }) => {
  const deadline = Date.now() + timeoutMs;
  const context = {
    functionName: process.env.AWS_LAMBDA_FUNCTION_NAME,
    functionVersion: '$LATEST',
    memoryLimitInMB: process.env.AWS_LAMBDA_FUNCTION_MEMORY_SIZE,
    awsRequestId: randomUUID(),
    invokedFunctionArn: `arn:aws:lambda:${process.env.AWS_REGION}:123456789012:function:${process.env.AWS_LAMBDA_FUNCTION_NAME}`,
    logGroupName: `/aws/lambda/${process.env.AWS_LAMBDA_FUNCTION_NAME}`,
    callbackWaitsForEmptyEventLoop: true,
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
  };
  try {
    const value = await handler(message.event, context);
    process.send?.({ id: message.id, ok: true, value });
  } catch (error) {
    process.send?.({
      id: message.id,
      ok: false,
      error: error instanceof Error ? error.message : String(error),
    });
  }
});
process.send?.({ ready: true });
