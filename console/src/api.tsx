/**
 * The console's API access: the typed client of lib/client (the same one the CLI uses), built
 * for the signed-in session, with every 401 turned into "sign in again". Components reach it
 * with `useApi()`.
 */
import { createContext, type ReactNode, useContext, useMemo } from 'react';
import { type AgentRunsClient, createClient } from '../../lib/client/client.ts';
import type { ConsoleConfig } from '../../lib/http/console-config.ts';
import type { Session } from './auth/session.ts';
import { apiBase } from './config.ts';

export interface Api {
  client: AgentRunsClient;
  baseUrl: string;
  session: Session;
  config: ConsoleConfig;
}

const ApiContext = createContext<Api | null>(null);

export function ApiProvider(props: {
  config: ConsoleConfig;
  session: Session;
  onUnauthorized: () => void;
  children: ReactNode;
}) {
  const { config, session, onUnauthorized } = props;
  const api = useMemo<Api>(() => {
    const baseUrl = apiBase(config);
    const client = createClient({
      baseUrl,
      token: session.token,
      fetch: async (request) => {
        const response = await fetch(request);
        if (response.status === 401) onUnauthorized();
        return response;
      },
    });
    return { client, baseUrl, session, config };
  }, [config, session, onUnauthorized]);
  return <ApiContext.Provider value={api}>{props.children}</ApiContext.Provider>;
}

export function useApi(): Api {
  const api = useContext(ApiContext);
  if (api === null) throw new Error('useApi outside ApiProvider');
  return api;
}
