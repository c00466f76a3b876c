import { Readable } from 'node:stream';
import { type InvokeCommand, type InvokeCommandOutput, LambdaClient } from '@aws-sdk/client-lambda';
import { describe, expect, it } from 'vitest';
import { TOOL_RESULT_ENVELOPE } from '../../lib/contracts/index.ts';
import type { ToolCallRequest } from '../../lib/engine/ports.ts';
import {
  createAuditLog,
  createPolicyGate,
  createToolHost,
  createToolRegistry,
  type LambdaHandler,
  type LambdaInvoker,
} from '../../lib/tools/index.ts';

const credentials = { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'not-a-secret' };

/** A real LambdaClient whose send returns a recorded InvokeCommand output and records the commands. */
function recordedClient(output: { FunctionError?: string; Payload?: Uint8Array }) {
  const client = new LambdaClient({ region: 'eu-west-1', credentials });
  const sent: InvokeCommand[] = [];
  const send = async (command: InvokeCommand): Promise<InvokeCommandOutput> => {
    sent.push(command);
    return {
      $metadata: { httpStatusCode: 200 },
      StatusCode: 200,
      ...output,
    } as unknown as InvokeCommandOutput;
  };
  Object.assign(client, { send });
  return { client, sent };
}

/** A real LambdaClient whose HTTP layer answers with one recorded Lambda service response. */
function httpRecordedClient(status: number, headers: Record<string, string>, body: string): LambdaInvoker {
  return new LambdaClient({
    region: 'eu-west-1',
    credentials,
    maxAttempts: 1,
    requestHandler: {
      handle: async () => ({
        response: { statusCode: status, headers, body: Readable.from([Buffer.from(body)]) },
      }),
    } as unknown as LambdaClient['config']['requestHandler'],
  });
}

const bytes = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));

function hostWith(handler: LambdaHandler, hostClient?: LambdaInvoker, mutating = true) {
  const registry = createToolRegistry();
  registry.register({
    name: 'book',
    version: '1.0.0',
    input_schema: { type: 'object', properties: { seat: { type: 'string' } } },
    handler,
    metadata: { mutating, replay_safe: true, timeout_ms: 5_000 },
  });
  return createToolHost({
    registry,
    gate: createPolicyGate(),
    audit: createAuditLog(() => {}),
    ...(hostClient === undefined ? {} : { lambdaClient: hostClient }),
  });
}

const request: ToolCallRequest = {
  run_id: 'run-l',
  op_id: 'op-l',
  tool: 'book',
  args: { seat: '3A' },
  principal: { kind: 'user', id: 'u-1' },
  attempt: 1,
  mutating: true,
  replay_safe: true,
};
const never = new AbortController().signal;

describe('Lambda handler', () => {
  it('invokes the function synchronously with {args, context} and wraps its answer', async () => {
    const { client, sent } = recordedClient({ Payload: bytes({ booked: true }) });
    const host = hostWith({ kind: 'lambda', function_name: 'book-fn', qualifier: 'live', client });

    const envelope = await host.execute(request, never);

    expect(envelope).toMatchObject({ status: 'succeeded', legacy: true, payload: { booked: true } });
    const input = sent[0]?.input;
    expect(input).toMatchObject({
      FunctionName: 'book-fn',
      Qualifier: 'live',
      InvocationType: 'RequestResponse',
    });
    expect(JSON.parse(new TextDecoder().decode(input?.Payload as Uint8Array))).toEqual({
      args: { seat: '3A', __raisin_context: { run_id: 'run-l', operation_id: 'op-l' } },
      context: {
        run_id: 'run-l',
        operation_id: 'op-l',
        idempotency_key: 'op-l',
        principal: { kind: 'user', id: 'u-1' },
        attempt: 1,
        timeout_ms: 5_000,
      },
    });
  });

  it('passes an envelope answered by the function through', async () => {
    const { client } = recordedClient({
      Payload: bytes({ envelope: TOOL_RESULT_ENVELOPE, status: 'blocked' }),
    });
    const envelope = await hostWith({ kind: 'lambda', function_name: 'f', client }).execute(request, never);
    expect(envelope).toMatchObject({ status: 'blocked', operation_id: 'op-l' });
    expect(envelope.legacy).toBeUndefined();
  });

  it('uses the host client when the handler brings none', async () => {
    const { client, sent } = recordedClient({ Payload: bytes(1) });
    const envelope = await hostWith({ kind: 'lambda', function_name: 'f' }, client).execute(request, never);
    expect(envelope.payload).toBe(1);
    expect(sent).toHaveLength(1);
  });

  it('fails with unsupported when no Lambda client is configured', async () => {
    const envelope = await hostWith({ kind: 'lambda', function_name: 'f' }).execute(request, never);
    expect(envelope).toMatchObject({ status: 'failed', error_class: 'unsupported' });
    expect(envelope.diagnostics[0]?.code).toBe('lambda_client_missing');
  });

  it('maps an unhandled function error to tool_error without its message', async () => {
    const { client } = recordedClient({
      FunctionError: 'Unhandled',
      Payload: bytes({ errorType: 'Error', errorMessage: 'connect to 10.0.0.5 with password hunter2' }),
    });
    const envelope = await hostWith({ kind: 'lambda', function_name: 'f', client }).execute(request, never);
    expect(envelope).toMatchObject({ status: 'failed', error_class: 'tool_error' });
    expect(JSON.stringify(envelope)).not.toContain('hunter2');
  });

  it.each([
    [{ errorType: 'conflict', errorMessage: 'x' }, 'conflict', false],
    [{ errorType: 'Error', error_class: 'rate_limited' }, 'rate_limited', true],
    [{ errorType: 'Sandbox.Timedout', errorMessage: 'Task timed out after 3.00 seconds' }, 'timeout', true],
  ] as const)('maps the function error %j to %s', async (payload, errorClass, retryable) => {
    const { client } = recordedClient({ FunctionError: 'Handled', Payload: bytes(payload) });
    const envelope = await hostWith({ kind: 'lambda', function_name: 'f', client }).execute(request, never);
    expect(envelope).toMatchObject({ error_class: errorClass, retry_policy: { retryable } });
  });

  it('refuses a function answer that is not JSON', async () => {
    const { client } = recordedClient({ Payload: new TextEncoder().encode('<html>') });
    const envelope = await hostWith({ kind: 'lambda', function_name: 'f', client }).execute(request, never);
    expect(envelope.diagnostics[0]?.code).toBe('response_not_json');
  });

  it.each([
    [404, 'ResourceNotFoundException', 'not_found'],
    [403, 'AccessDeniedException', 'permission_denied'],
    [429, 'TooManyRequestsException', 'rate_limited'],
    [409, 'ResourceConflictException', 'conflict'],
    [500, 'ServiceException', 'transient'],
  ])('maps a recorded Lambda service %i %s to %s', async (status, errorType, errorClass) => {
    const client = httpRecordedClient(
      status,
      { 'x-amzn-errortype': errorType, 'content-type': 'application/json' },
      JSON.stringify({
        Type: 'User',
        message: 'Function not found: arn:aws:lambda:eu-west-1:123456789012:function:f',
      }),
    );
    const envelope = await hostWith({ kind: 'lambda', function_name: 'f', client }).execute(request, never);
    expect(envelope).toMatchObject({ status: 'failed', error_class: errorClass });
    expect(JSON.stringify(envelope)).not.toContain('123456789012');
  });

  it('reads a recorded function error through the SDK response headers', async () => {
    const client = httpRecordedClient(
      200,
      { 'x-amz-function-error': 'Unhandled' },
      '{"errorType":"not_found"}',
    );
    const envelope = await hostWith({ kind: 'lambda', function_name: 'f', client }).execute(request, never);
    expect(envelope.error_class).toBe('not_found');
  });
});
