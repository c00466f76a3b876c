/**
 * The console's shell: sign-in (a pasted token, a token in the URL fragment, or the OAuth code
 * flow), then the routes under /console: `/` the runs list, `/runs/{id}` a run, and
 * `/runs/{id}/transcript` its conversation. Data comes through react-query over the typed
 * client; a 401 anywhere signs the user out with a message.
 */
import { QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { lazy, Suspense, useCallback, useMemo, useState } from 'react';
import { Link, Route, Router, Switch } from 'wouter';
import { ApiError } from '../../lib/client/errors.ts';
import type { ConsoleConfig } from '../../lib/http/console-config.ts';
import { ApiProvider } from './api.tsx';
import {
  clearSession,
  readSession,
  type Session,
  saveSession,
  tokenFromFragment,
  tokenSession,
} from './auth/session.ts';
import { BASE } from './config.ts';
import { environmentHint } from './model/words.ts';
import { Callback } from './views/Callback.tsx';
import { Login } from './views/Login.tsx';
import { RunPage } from './views/RunPage.tsx';
import { RunsList } from './views/RunsList.tsx';

// Split off: views a first load of the runs list or a run page does not draw (smaller bundle).
const TranscriptPage = lazy(() =>
  import('./views/Transcript.tsx').then((m) => ({ default: m.TranscriptPage })),
);

/** A session from the URL fragment (the start banner's link), else the stored one. */
function initialSession(): Session | null {
  const { token, rest } = tokenFromFragment(window.location.hash);
  if (token !== null) {
    const session = tokenSession(token);
    saveSession(localStorage, session);
    history.replaceState(history.state, '', `${window.location.pathname}${window.location.search}${rest}`);
    return session;
  }
  return readSession(localStorage, Date.now());
}

/** Retry reads that may succeed later (unreachable, 5xx), never 4xx. */
function retryable(failures: number, error: unknown): boolean {
  if (error instanceof ApiError && !error.retryable) return false;
  return failures < 3;
}

export function App({ config }: { config: ConsoleConfig }) {
  const [session, setSession] = useState<Session | null>(initialSession);
  const [notice, setNotice] = useState<string | null>(null);
  const queryClient = useMemo(
    () => new QueryClient({ defaultOptions: { queries: { retry: retryable, staleTime: 1_000 } } }),
    [],
  );
  const onUnauthorized = useCallback(() => {
    clearSession(localStorage);
    setSession(null);
    setNotice('The API did not accept your token (401). Sign in again.');
  }, []);
  const signIn = useCallback(
    (next: Session) => {
      saveSession(localStorage, next);
      queryClient.clear();
      setNotice(null);
      setSession(next);
    },
    [queryClient],
  );
  const signOut = useCallback(() => {
    clearSession(localStorage);
    queryClient.clear();
    setSession(null);
    setNotice('Signed out.');
    const auth = config.auth;
    if (auth.kind === 'oauth') {
      void import('./auth/oauth.ts').then(({ signOutUrl }) => {
        const url = signOutUrl(auth, window.location.origin, BASE);
        if (url !== null) window.location.assign(url);
      });
    }
  }, [config, queryClient]);

  return (
    <Router base={BASE.replace(/\/$/, '')}>
      <a className="skip-link" href="#main">
        Skip to content
      </a>
      <header className="top-bar">
        <Link href="/" className="brand">
          Agent Runs
        </Link>
        {config.environment !== undefined ? (
          <span className="env-tag" title={environmentHint(config.environment)} data-testid="env-tag">
            {config.environment}
          </span>
        ) : null}
        <span className="spacer" />
        {session !== null ? (
          <button type="button" className="link-button" onClick={signOut}>
            Sign out
          </button>
        ) : null}
      </header>
      <main id="main" tabIndex={-1}>
        <Switch>
          <Route path="/callback">
            <Callback config={config} onSession={signIn} />
          </Route>
          <Route>
            {session === null ? (
              <Login config={config} notice={notice} onSession={signIn} />
            ) : (
              <ApiProvider config={config} session={session} onUnauthorized={onUnauthorized}>
                <QueryClientProvider client={queryClient}>
                  <Switch>
                    <Route path="/">
                      <RunsList />
                    </Route>
                    <Route path="/runs/:id/transcript">
                      {(p) => (
                        <Suspense fallback={<p aria-live="polite">Loading the transcript…</p>}>
                          <TranscriptPage key={p.id} runId={p.id} />
                        </Suspense>
                      )}
                    </Route>
                    <Route path="/runs/:id">{(p) => <RunPage key={p.id} runId={p.id} />}</Route>
                    <Route>
                      <h1>Not found</h1>
                      <p>
                        <Link href="/">Back to the runs</Link>
                      </p>
                    </Route>
                  </Switch>
                </QueryClientProvider>
              </ApiProvider>
            )}
          </Route>
        </Switch>
      </main>
    </Router>
  );
}
