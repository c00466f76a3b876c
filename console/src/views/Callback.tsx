/** `/console/callback`: completes the OAuth sign-in (code + PKCE verifier → tokens), then returns where the user was. */
import { useEffect, useRef, useState } from 'react';
import { Link, useLocation } from 'wouter';
import type { ConsoleConfig } from '../../../lib/http/console-config.ts';
import type { Session } from '../auth/session.ts';
import { BASE } from '../config.ts';

export function Callback(props: { config: ConsoleConfig; onSession: (s: Session) => void }) {
  const [, navigate] = useLocation();
  const [error, setError] = useState<string | null>(null);
  const started = useRef(false);
  const { config, onSession } = props;

  useEffect(() => {
    // The code can be exchanged once: StrictMode's second effect run must not try again.
    if (started.current) return;
    started.current = true;
    if (config.auth.kind !== 'oauth') {
      setError('This console signs in with a token, not OAuth.');
      return;
    }
    const auth = config.auth;
    import('../auth/oauth.ts')
      .then(({ completeSignIn }) => completeSignIn(auth, new URL(window.location.href), BASE, Date.now()))
      .then(
        ({ session, returnTo }) => {
          onSession(session);
          navigate(returnTo, { replace: true });
        },
        (err: unknown) => setError(err instanceof Error ? err.message : String(err)),
      );
  }, [config, onSession, navigate]);

  return (
    <section className="login card" aria-live="polite">
      <h1>Signing in…</h1>
      {error !== null ? (
        <>
          <p className="error" role="alert">
            Sign-in failed: {error}
          </p>
          <Link href="/">Start again</Link>
        </>
      ) : null}
    </section>
  );
}
