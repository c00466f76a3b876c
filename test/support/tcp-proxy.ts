/**
 * A TCP proxy in front of a local port that a test can cut: `cut()` destroys every open
 * connection at once, as a network failure would (the client sees a reset mid-response).
 */
import { createConnection, createServer, type Socket } from 'node:net';

export interface TcpProxy {
  /** `http://127.0.0.1:{port}`: connect here instead of the target. */
  url: string;
  /** Destroys every open connection; returns how many there were. */
  cut(): number;
  close(): Promise<void>;
}

export async function startTcpProxy(targetPort: number): Promise<TcpProxy> {
  const open = new Set<Socket>();
  const server = createServer((inbound) => {
    const outbound = createConnection({ host: '127.0.0.1', port: targetPort });
    for (const s of [inbound, outbound]) {
      open.add(s);
      s.on('close', () => open.delete(s));
      s.on('error', () => {
        inbound.destroy();
        outbound.destroy();
      });
    }
    inbound.pipe(outbound);
    outbound.pipe(inbound);
  });
  await new Promise<void>((ready) => server.listen(0, '127.0.0.1', ready));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('the proxy has no port');
  return {
    url: `http://127.0.0.1:${address.port}`,
    cut() {
      const n = open.size;
      for (const s of open) s.destroy();
      return n;
    },
    async close() {
      for (const s of open) s.destroy();
      await new Promise<void>((done) => server.close(() => done()));
    },
  };
}
