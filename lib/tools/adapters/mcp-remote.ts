/**
 * An MCP client for a tool registered as data (`target.kind: "mcp"`): a Streamable HTTP
 * connection to the server's URL, opened on the first call and reused; a failed connection is
 * forgotten so that the next call tries again. Auth headers (a secret) are read when the
 * connection opens. The calls themselves go through adapters/mcp.ts like any MCP tool's. The
 * MCP SDK's client is imported when the first connection opens, so a process that calls no MCP
 * tool never loads it.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { McpToolClient } from '../handler-types.ts';

/** A lazily connected client of the MCP server at `url`. */
export function remoteMcpClient(
  url: string,
  headers?: () => Promise<Readonly<Record<string, string>>>,
): McpToolClient {
  let connected: Promise<Client> | null = null;
  const connect = async (): Promise<Client> => {
    const [{ Client }, { StreamableHTTPClientTransport }] = await Promise.all([
      import('@modelcontextprotocol/sdk/client/index.js'),
      import('@modelcontextprotocol/sdk/client/streamableHttp.js'),
    ]);
    const client = new Client({ name: 'agent-runs', version: '1.0.0' });
    const transport = new StreamableHTTPClientTransport(new URL(url), {
      requestInit: { headers: headers === undefined ? {} : { ...(await headers()) } },
    });
    await client.connect(transport);
    return client;
  };
  return {
    async callTool(...args: Parameters<McpToolClient['callTool']>) {
      connected ??= connect().catch((err: unknown) => {
        connected = null;
        throw err;
      });
      return (await connected).callTool(...args);
    },
  };
}
