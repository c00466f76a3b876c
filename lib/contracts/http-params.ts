/**
 * The HTTP API's path and query parameters, beside the bodies and answers (http-api.ts): each
 * parses the text as it arrives (a query or path value is a string) to what the route reads.
 * lib/http validates requests with these very objects and documents them in `GET /openapi.json`
 * (a parameter's name and place come from its key and the route; `.meta` adds its description
 * and example); the client (lib/client) checks its own parameters with them before it sends a
 * call. Plain zod, browser-safe. See docs/reference/http-api.md.
 */
import { z } from 'zod';
import { cleanId, refuseUnsafeIdChars } from './clean-text.ts';
import { MAX_SUBJECT_PATH_CHARS, MAX_SUBJECT_WORKSPACE_CHARS, Subject } from './common.ts';
import { RunStatus } from './run.ts';

/** Maximum long-polling wait, in seconds. */
export const MAX_WAIT_SECONDS = 20;

/**
 * A whole-number query or path parameter: a string of digits (as it arrives), parsed to a
 * number in [min, max]; `fallback` when absent.
 */
function wholeNumber(min: number, max: number, fallback?: number) {
  const digits = z.string().regex(/^\d{1,15}$/, 'expected a whole number');
  const parsed = (fallback === undefined ? digits : digits.default(String(fallback))).transform(Number);
  return parsed.pipe(z.number().int().min(min).max(max));
}

/** A number of seconds to wait (0..MAX_WAIT_SECONDS), `fallback` when absent. */
function waitSeconds(fallback: number) {
  return z
    .string()
    .regex(/^\d{1,3}(\.\d{1,3})?$/, 'expected a number of seconds')
    .default(String(fallback))
    .transform(Number)
    .pipe(z.number().min(0).max(MAX_WAIT_SECONDS));
}

/** A run id in the path: no control characters (cleanId), so none is echoed back in an answer. */
export const RunIdParams = z.object({
  id: cleanId(200).meta({ example: 'run_0f3c...' }),
});

/**
 * `GET /runs`: by status (`status`), or by subject (`subject_workspace` + `subject_path`: the live
 * run), the subject's fields bounded and refused `control_character` as a create's are.
 */
export const ListRunsQuery = z
  .object({
    status: RunStatus.optional(),
    subject_workspace: Subject.shape.workspace.max(MAX_SUBJECT_WORKSPACE_CHARS).optional(),
    subject_path: Subject.shape.path.max(MAX_SUBJECT_PATH_CHARS).optional(),
    limit: wholeNumber(1, 100, 20).meta({ param: { description: '1..100 (default 20).' } }),
    cursor: z.string().min(1).max(2048).optional(),
  })
  .superRefine((q, ctx) => {
    // Checked as a create checks a subject (common.ts CallerSubject): no run can hold another.
    refuseUnsafeIdChars(ctx, ['subject_workspace'], q.subject_workspace);
    refuseUnsafeIdChars(ctx, ['subject_path'], q.subject_path);
    const subjectGiven = q.subject_workspace !== undefined || q.subject_path !== undefined;
    if (subjectGiven && (q.subject_workspace === undefined || q.subject_path === undefined)) {
      ctx.addIssue({
        code: 'custom',
        path: [q.subject_workspace === undefined ? 'subject_workspace' : 'subject_path'],
        message: 'subject_workspace and subject_path go together',
      });
    }
    if (!subjectGiven && q.status === undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['status'],
        message: 'give status, or subject_workspace and subject_path',
      });
    }
  });

/** `GET /runs/{id}/events`: a page after a seq, long-polling up to `wait` seconds for the first. */
export const EventsQuery = z.object({
  after: wholeNumber(0, Number.MAX_SAFE_INTEGER, 0).meta({
    param: { description: 'Return events with seq > after (default 0).' },
  }),
  limit: wholeNumber(1, 1000, 100).meta({ param: { description: '1..1000 (default 100).' } }),
  wait: waitSeconds(0).meta({
    param: {
      description: 'Seconds (0..20, default 0) to wait for an event after `after` when there is none yet.',
    },
  }),
});

/** A seq as a stream's `after=` takes it: 1..15 plain decimal digits (no sign, point, exponent, space or `0x`). */
const SeqDigits = z.string().regex(/^\d{1,15}$/, 'expected a whole number');

/**
 * The `Last-Event-ID` header of `GET /runs/{id}/events/stream`, parsed exactly as its `after=`:
 * plain decimal digits to a whole number, 0 or more. Anything else (`0x5`, `+4`, `4e0`, `3.0`,
 * ` 4 `, an empty value) fails; the route answers 400 validation_failed naming the header.
 */
export const LastEventIdHeader = SeqDigits.transform(Number);

/** `GET /runs/{id}/events/stream`: like the events query, but waiting 20 s by default. */
export const StreamQuery = z.object({
  after: SeqDigits.default('0')
    .transform(Number)
    .meta({ param: { description: 'Events with seq > after (default 0); Last-Event-ID wins when larger.' } }),
  limit: z
    .string()
    .regex(/^\d{1,4}$/, 'expected a whole number')
    .default('100')
    .transform(Number)
    .pipe(z.number().int().min(1).max(1000))
    .meta({ param: { description: '1..1000 (default 100).' } }),
  wait: waitSeconds(MAX_WAIT_SECONDS).meta({
    param: { description: 'Seconds (0..20, default 20) a response waits for the first event.' },
  }),
});

/** `GET /runs/{id}/checkpoints/{n}`: a checkpoint number. */
export const CheckpointParams = RunIdParams.extend({ n: wholeNumber(0, Number.MAX_SAFE_INTEGER) });

/** `GET /runs/{id}/at/{seq}`: a seq of the run's log. */
export const RunAtParams = RunIdParams.extend({ seq: wholeNumber(1, Number.MAX_SAFE_INTEGER) });

/** `GET /runs/{id}/state?rev=`: a domain state revision (default: the run's current one). */
export const StateQuery = z.object({
  rev: wholeNumber(0, Number.MAX_SAFE_INTEGER)
    .optional()
    .meta({ param: { description: 'The state revision (default: the current one).' } }),
});

/**
 * `POST /results/{resume_key}`: the key an operation waits on. No control characters (cleanId):
 * 400 validation_failed, whatever the key's state.
 */
export const ResumeKeyParams = z.object({ resume_key: cleanId(1024) });

/** The caller-chosen id of a delivery: a repeat with the same id is answered as a duplicate. */
export const DeliveryQuery = z.object({
  delivery_id: z
    .string()
    .min(1)
    .max(256)
    .regex(/^[A-Za-z0-9._:~-]+$/, 'letters, digits and . _ : ~ -')
    .optional()
    .meta({
      description:
        'Caller-chosen id of this delivery: a repeat gets {ack: "duplicate", original_seq} instead of a second result. Without it a repeat cannot be recognized.',
    }),
});

/** `PUT|GET /functions/{path}`: a function path without its leading slash. */
export const FunctionParams = z.object({
  path: z
    .string()
    .max(512)
    .regex(/^[A-Za-z0-9._-]+(\/[A-Za-z0-9._-]+)*$/, 'segments of letters, digits, . _ - separated by /')
    .refine((p) => !p.split('/').some((s) => s === '.' || s === '..'), 'no . or .. segments')
    .meta({
      description: 'The function path without its leading slash; may contain slashes (agents/x → /agents/x).',
    }),
});

/** `GET /admin/{kind}/entry?name=&version=`: the version defaults to the current one. */
export const RegistryEntryQuery = z.object({
  name: z.string().min(1).max(128).meta({ example: 'lookup_order' }),
  version: z.string().min(1).max(128).optional().meta({ example: '1.0.0' }),
});
