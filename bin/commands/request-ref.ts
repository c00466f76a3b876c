/**
 * How `approve` and `answer` read the request and digest a person types: a request id as the API
 * spells it (`{run_id}/req/{n}`) or without its run (`req/{n}`, expanded), and a digest in full
 * or as the short form `events` and the console print (its first 12 or more hex characters, with
 * or without `sha256:` / `sha256:rfc8785:` and the trailing `…`), expanded to the open request's
 * `subject.digest` before anything is sent. A reference that cannot be the run's request, or a
 * digest that is not the request's, fails here: nothing is sent, so no control_rejected is
 * written into the run's log. Pure. docs/reference/cli.md, `approve`.
 */
import type { OpenRequest } from '../../lib/contracts/index.ts';
import { CliError } from './context.ts';

/** The fewest hex characters a digest prefix must have: the short form `events` prints. */
export const MIN_DIGEST_PREFIX_CHARS = 12;

/** A whole sha256 digest, bare or after `sha256:` / `sha256:rfc8785:`: sent as its bare hex. */
const FULL_DIGEST = /^(?:sha256:(?:rfc8785:)?)?[0-9a-f]{64}$/;

/** The hex of a digest without its algorithm prefix and a trailing `…` (or `...`) of the short form. */
export function bareDigest(digest: string): string {
  return digest
    .replace(/^sha256:(?:rfc8785:)?/, '')
    .replace(/(?:…|\.\.\.)$/, '')
    .toLowerCase();
}

/** Whether `digest` is whole, so that it goes to the API as its bare hex (a stale one is the API's to refuse). */
export function isFullDigest(digest: string): boolean {
  return FULL_DIGEST.test(digest);
}

/**
 * The request id `ref` names on run `runId`: `{runId}/req/{n}` as given, `req/{n}` with the run
 * put in front. Throws CliError(invalid_argument) for any other form, the run's hint in it.
 */
export function requestIdOf(runId: string, ref: string, cli: string): string {
  if (/^req\/\d+$/.test(ref)) return `${runId}/${ref}`;
  if (ref.startsWith(`${runId}/req/`) && /^\d+$/.test(ref.slice(runId.length + 5))) return ref;
  throw new CliError(
    'invalid_argument',
    `${ref} is not a request of run ${runId}: request ids read ${runId}/req/N (or req/N); ` +
      `\`${cli} runs get ${runId}\` lists the open ones`,
  );
}

/**
 * The digest to quote for approval `requestId` among the run's `open` requests: the request's own
 * `subject.digest` when `given` is it or the start of it (at least 12 hex characters). Throws
 * CliError(invalid_argument) when the request is not open, is no approval, or `given` does not
 * match its digest (the message says how the digest begins and where to read it whole).
 */
export function digestToQuote(
  runId: string,
  requestId: string,
  given: string,
  open: readonly OpenRequest[],
  cli: string,
): string {
  const getRun = `\`${cli} runs get ${runId}\``;
  const request = open.find((r) => r.request_id === requestId);
  if (request === undefined) {
    const ids = open.map((r) => r.request_id);
    throw new CliError(
      'invalid_argument',
      `request ${requestId} is not open on run ${runId} (open: ${ids.length > 0 ? ids.join(', ') : 'none'}); ${getRun} shows what the run waits for`,
    );
  }
  if (request.kind !== 'approval')
    throw new CliError(
      'invalid_argument',
      `request ${requestId} is ${request.kind === 'input' ? 'a question' : 'an awaited result'}, not an approval; ${getRun} prints the command that gives it`,
    );
  const digest = request.subject.digest;
  if (given === digest) return digest;
  const prefix = bareDigest(given);
  const full = bareDigest(digest);
  if (/^[0-9a-f]+$/.test(prefix) && prefix.length >= MIN_DIGEST_PREFIX_CHARS && full.startsWith(prefix))
    return digest;
  const short =
    /^[0-9a-f]+$/.test(prefix) && full.startsWith(prefix)
      ? `: a prefix needs at least ${MIN_DIGEST_PREFIX_CHARS} hex characters`
      : '';
  throw new CliError(
    'invalid_argument',
    `the digest ${given} does not match request ${requestId} (its digest begins ${full.slice(0, MIN_DIGEST_PREFIX_CHARS)})${short}; use the full digest from ${getRun}`,
  );
}
