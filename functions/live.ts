/**
 * Lambda: the WebSocket API's $connect, $disconnect and $default routes → lib/handlers/live-socket.ts
 * (wired by lib/handlers/live-config.ts). A connect is authenticated by the bearer token
 * (`?token=` or Authorization) verified against the API's JWT issuer (lib/live/jwt-auth.ts); a
 * subscription is authorized like a read of the run. docs/contracts/run-lifecycle.md, "over HTTP,
 * WebSocket".
 */
import { lambdaContainer } from '../lib/handlers/container.ts';
import { liveSocketFromEnv } from '../lib/handlers/live-config.ts';
import type { SocketHandler } from '../lib/handlers/live-socket.ts';

const container = lambdaContainer('agent-runs-live');
let socket: SocketHandler | undefined;

export const handler: SocketHandler = (event) => {
  socket ??= liveSocketFromEnv(container(), process.env);
  return socket(event);
};
