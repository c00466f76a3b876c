/**
 * The API Gateway adapter of the live fan-out reads a GoneException as a connection that left:
 * a post answers `gone`, a close is no error, and `alive` (GetConnection, which the connect
 * uses to forget sockets whose $disconnect never came) answers false. Any other failure is
 * thrown (the stream record or the connect is then retried). The client is a stand-in that
 * records the commands and injects the fault.
 */
import {
  type ApiGatewayManagementApiClient,
  DeleteConnectionCommand,
  GetConnectionCommand,
  PostToConnectionCommand,
} from '@aws-sdk/client-apigatewaymanagementapi';
import { describe, expect, it } from 'vitest';
import { apiGatewayPoster } from '../../lib/live/adapters.ts';

/** A management client whose every call fails with `fault` (or succeeds when null), recording the commands sent. */
function clientFailingWith(fault: string | null) {
  const sent: unknown[] = [];
  const client = {
    async send(command: unknown) {
      sent.push(command);
      if (fault !== null) throw Object.assign(new Error(fault), { name: fault });
      return {};
    },
  } as unknown as ApiGatewayManagementApiClient;
  return { client, sent };
}

describe('the API Gateway poster', () => {
  it('answers gone, closes quietly and reports not alive for a GoneException', async () => {
    const { client, sent } = clientFailingWith('GoneException');
    const poster = apiGatewayPoster(client);

    expect(await poster.post('c1', { type: 'subscribed', run_id: 'r', after: 0 })).toBe('gone');
    await expect(poster.close('c1', 4001, 'token_expired')).resolves.toBeUndefined();
    expect(await poster.alive('c1')).toBe(false);
    expect(sent.map((c) => (c as object).constructor)).toEqual([
      PostToConnectionCommand,
      DeleteConnectionCommand,
      GetConnectionCommand,
    ]);
    expect((sent[2] as GetConnectionCommand).input).toEqual({ ConnectionId: 'c1' });
  });

  it('reports alive when GetConnection answers, and throws any other failure', async () => {
    expect(await apiGatewayPoster(clientFailingWith(null).client).alive('c1')).toBe(true);
    const throttled = apiGatewayPoster(clientFailingWith('LimitExceededException').client);
    await expect(throttled.alive('c1')).rejects.toMatchObject({ name: 'LimitExceededException' });
    await expect(throttled.post('c1', { type: 'subscribed', run_id: 'r', after: 0 })).rejects.toMatchObject({
      name: 'LimitExceededException',
    });
  });
});
