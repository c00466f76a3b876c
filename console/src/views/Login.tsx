/**
 * Sign-in. With a token login (the local stack): paste a bearer token (checked against the API
 * before it is kept). With an OAuth login (a deployment with a user pool): one button to the
 * authorization server, PKCE.
 */
import { type FormEvent, useState } from 'react';
import { createClient } from '../../../lib/client/client.ts';
import { ApiError } from '../../../lib/client/errors.ts';
import type { ConsoleConfig } from '../../../lib/http/console-config.ts';
import { type Session, tokenSession } from '../auth/session.ts';
import { apiBase, BASE } from '../config.ts';

export function Login(props: {
  config: ConsoleConfig;
  notice: string | null;
  onSession: (s: Session) => void;
}) {
  const { config } = props;
  const [token, setToken] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  async function submit(event: FormEvent) {
    event.preventDefault();
    const value = token.trim();
    if (value === '') {
      setError('Paste a token first.');
      return;
    }
    setBusy(true);
    setError(null);
    try {
      // Any authenticated read proves the token; the tool list is small and always there.
      await createClient({ baseUrl: apiBase(config), token: value }).listTools();
      props.onSession(tokenSession(value));
    } catch (err) {
      setError(
        err instanceof ApiError && err.status === 401
          ? 'The API did not accept this token (401 unauthenticated).'
          : `Could not check the token: ${err instanceof Error ? err.message : String(err)}`,
      );
    } finally {
      setBusy(false);
    }
  }

  const returnTo = window.location.pathname.slice(BASE.length - 1) || '/';
  return (
    <section className="login card" aria-labelledby="login-title">
      <h1 id="login-title">Sign in</h1>
      {props.notice !== null ? (
        <p className="notice" role="status">
          {props.notice}
        </p>
      ) : null}
      {config.auth.kind === 'oauth' ? (
        <>
          <p>Sign in with your organisation's account.</p>
          <button
            type="button"
            className="primary"
            onClick={() => {
              const auth = config.auth;
              if (auth.kind !== 'oauth') return;
              // Loaded only by consoles that sign in with OAuth.
              import('../auth/oauth.ts')
                .then(({ startSignIn }) => startSignIn(auth, window.location, BASE, returnTo))
                .catch((err: unknown) => setError(err instanceof Error ? err.message : String(err)));
            }}
          >
            Sign in
          </button>
        </>
      ) : (
        <form onSubmit={submit}>
          <label htmlFor="token">Bearer token</label>
          <input
            id="token"
            name="token"
            type="password"
            autoComplete="off"
            spellCheck={false}
            value={token}
            onChange={(e) => setToken(e.target.value)}
            aria-describedby="token-hint"
          />
          <p id="token-hint" className="hint">
            {config.auth.hint ??
              'The token the API accepts: the one `npm start` prints, or `npx agent-runs token --sub NAME`.'}
          </p>
          <button type="submit" className="primary" disabled={busy}>
            {busy ? 'Checking…' : 'Sign in'}
          </button>
        </form>
      )}
      {error !== null ? (
        <p className="error" role="alert">
          {error}
        </p>
      ) : null}
    </section>
  );
}
