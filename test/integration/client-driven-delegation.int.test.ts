/**
 * A client-driven run cannot delegate, through the HTTP API on DynamoDB Local and fauxqs: a
 * `tool_call` operation naming a runtime tool (the delegate tools, any name starting with
 * `/lib/raisin`, case-blind) is refused 400 validation_failed, issue `reserved_tool` at
 * `request.tool`, and changes nothing: `counters.children` stays 0 and the run has no children.
 * Core executes delegation for reducer-driven runs only (docs/guides/delegation.md); before this
 * rule such a call counted a child that never existed.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  DELEGATE_MESSAGE_TOOL,
  DELEGATE_TOOL,
  type Principal,
  type RunRecord,
} from '../../lib/contracts/index.ts';
import { bearerTokenAuth, createHttpApp, type HttpApp } from '../../lib/http/index.ts';
import type { Runtime } from '../../lib/runtime.ts';
import { localRuntime } from '../support/local-runtime.ts';

const ALICE: Principal = { kind: 'user', id: `cdd-alice-${randomUUID().slice(0, 8)}` };
let runtime: Runtime;
let app: HttpApp;

beforeAll(async () => {
  ({ runtime } = await localRuntime('client-driven-delegation'));
  app = createHttpApp({ ...runtime, auth: bearerTokenAuth('t-alice', ALICE), log: () => {} });
});

afterAll(() => runtime.close());

async function call(method: string, path: string, body?: unknown) {
  const response = await app.request(path, {
    method,
    headers: { authorization: 'Bearer t-alice', 'content-type': 'application/json' },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  return {
    status: response.status,
    body: (await response.json()) as Record<string, unknown> & { details?: { issues?: unknown[] } },
  };
}

describe('delegation from a client-driven run', () => {
  it('refuses a tool_call to a runtime tool with reserved_tool, counting no child', async () => {
    const created = await call('POST', '/runs', {
      subject: { workspace: `user:${ALICE.id}`, path: `/cdd/${randomUUID()}` },
      reducer: null,
      input: 'go',
    });
    expect(created.status).toBe(201);
    const run = created.body.run as RunRecord;
    const lease = await call('POST', `/runs/${run.run_id}/lease`, { owner: 'worker-1' });
    expect(lease.status).toBe(200);
    const fence = { owner: 'worker-1', epoch: (lease.body.lease as { epoch: number }).epoch };
    const before = await runtime.store.getRun(run.run_id);

    for (const tool of [
      DELEGATE_TOOL,
      DELEGATE_MESSAGE_TOOL,
      '/Lib/Raisin/agent-runs/delegate',
      '/lib/raisin',
      // Look-alikes: behind a space, with a doubled slash; behind a no-break space, with a
      // fullwidth slash or a zero-width space inside (each an identifier's unsafe character).
      ` ${DELEGATE_TOOL}`,
      `/${DELEGATE_TOOL}`,
      `\u00a0${DELEGATE_TOOL}`,
      `\uff0flib/raisin/agent-runs/delegate`,
      `\u200b${DELEGATE_TOOL}`,
    ]) {
      const begun = await call('POST', `/runs/${run.run_id}/operations`, {
        fence,
        kind: 'tool_call',
        replay_safe: true,
        request: { tool, args: { objective: 'a child' }, mutating: true },
      });
      expect(begun.status, tool).toBe(400);
      expect(begun.body.code).toBe('validation_failed');
      // An invisible or compatibility character is refused as in any identifier.
      const code = /[\u200b\u00a0\uff0f]/u.test(tool) ? 'control_character' : 'reserved_tool';
      expect(begun.body.details?.issues).toContainEqual(
        expect.objectContaining({ path: 'request.tool', code }),
      );
    }
    const after = await runtime.store.getRun(run.run_id);
    expect(after?.version).toBe(before?.version);
    expect(after?.counters.children).toBe(0);
    const children = await call('GET', `/runs/${run.run_id}/children`);
    expect(children.body).toMatchObject({ children: [] });

    // The client's own tools still begin.
    const own = await call('POST', `/runs/${run.run_id}/operations`, {
      fence,
      kind: 'tool_call',
      replay_safe: true,
      request: { tool: 'lookup', args: {}, mutating: false },
    });
    expect(own.status, JSON.stringify(own.body)).toBe(200);
    expect((await runtime.store.getRun(run.run_id))?.counters.children).toBe(0);
  });
});
