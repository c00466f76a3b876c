/**
 * The signed-in session: the bearer token the console sends to the API, kept in the browser's
 * localStorage (never in a static file, never in a URL the server sees). A token may arrive in
 * the page's URL fragment (`/console/#token=...`, the link `npm start` prints): the console takes
 * it and removes it from the address bar.
 */

export interface Session {
  /** Sent as `Authorization: Bearer <token>`. */
  token: string;
  via: 'token' | 'oauth';
  /** ms epoch after which the token is no longer valid, when known (JWT `exp`, OAuth `expires_in`). */
  expiresAt?: number;
  /** OAuth: the ID token (for the end-session request). */
  idToken?: string;
}

const KEY = 'agent-runs.console.session';

/** The token in a URL fragment such as `#token=abc&x=1`, and the fragment without it. */
export function tokenFromFragment(hash: string): { token: string | null; rest: string } {
  const params = new URLSearchParams(hash.startsWith('#') ? hash.slice(1) : hash);
  const token = params.get('token');
  params.delete('token');
  const rest = params.toString();
  return {
    token: token !== null && token.trim() !== '' ? token.trim() : null,
    rest: rest === '' ? '' : `#${rest}`,
  };
}

/** The `exp` claim of a JWT in ms, or undefined (not a JWT, or no exp). Not a verification: the API verifies. */
export function jwtExpiry(token: string): number | undefined {
  const part = token.split('.')[1];
  if (part === undefined) return undefined;
  try {
    const json = JSON.parse(atob(part.replace(/-/g, '+').replace(/_/g, '/'))) as { exp?: unknown };
    return typeof json.exp === 'number' ? json.exp * 1000 : undefined;
  } catch {
    return undefined;
  }
}

/** A session for a pasted token. */
export function tokenSession(token: string): Session {
  const expiresAt = jwtExpiry(token);
  return { token, via: 'token', ...(expiresAt !== undefined ? { expiresAt } : {}) };
}

export function readSession(storage: Storage, now: number): Session | null {
  const raw = storage.getItem(KEY);
  if (raw === null) return null;
  try {
    const s = JSON.parse(raw) as Partial<Session>;
    if (typeof s.token !== 'string' || s.token === '' || (s.via !== 'token' && s.via !== 'oauth'))
      return null;
    if (typeof s.expiresAt === 'number' && s.expiresAt <= now) return null;
    return s as Session;
  } catch {
    return null;
  }
}

export function saveSession(storage: Storage, session: Session): void {
  storage.setItem(KEY, JSON.stringify(session));
}

export function clearSession(storage: Storage): void {
  storage.removeItem(KEY);
}
