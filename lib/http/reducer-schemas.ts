/**
 * The reducer-upgrade route definitions (reducer-routes.ts registers them): the body of
 * `POST /admin/reducers/check` and its answer.
 */
import { createRoute, z } from '@hono/zod-openapi';
import {
  ReducerCheckReport as ReducerCheckReportContract,
  ReducerUpgradeReport as ReducerUpgradeReportContract,
} from '../contracts/index.ts';
import { errors, json, op } from './route-parts.ts';
import { named } from './schemas.ts';

/** The most runs one check request reads. */
export const MAX_CHECK_RUNS = 50;
/** The most time one check request spends starting runs, in ms. */
export const MAX_CHECK_TIME_MS = 60_000;

const FunctionPath = z
  .string()
  .max(512)
  .regex(/^\/[A-Za-z0-9._-]+(\/[A-Za-z0-9._-]+)*$/, 'a function path: /segments of letters, digits, . _ -');

export const CheckArtifact = z
  .union([
    z.object({
      function_path: FunctionPath,
      hash: z
        .string()
        .regex(/^[0-9a-f]{64}$/, 'sha256 hex')
        .optional()
        .openapi({
          description: 'The sha256 it must have (default: the one published now; the answer names it).',
        }),
    }),
    z.object({
      kind: z.enum(['js', 'wasm', 'star']),
      bytes_base64: z
        .string()
        .min(1)
        .regex(/^[A-Za-z0-9+/]*={0,2}$/, 'base64'),
    }),
  ])
  .openapi({
    description:
      'The artifact to check: the one published at function_path (its sha256 must be hash, when given), or the bytes themselves.',
  });

export const ReducerCheckInput = z
  .object({
    artifact: CheckArtifact,
    run_ids: z.array(z.string().min(1).max(128)).min(1).max(MAX_CHECK_RUNS).optional(),
    function_path: FunctionPath.optional(),
    limit: z.number().int().min(1).max(MAX_CHECK_RUNS).default(20),
    time_budget_ms: z.number().int().min(100).max(MAX_CHECK_TIME_MS).default(20_000),
  })
  .strict()
  .superRefine((body, ctx) => {
    if ((body.run_ids === undefined) === (body.function_path === undefined)) {
      ctx.addIssue({ code: 'custom', path: ['run_ids'], message: 'give either run_ids or function_path' });
    }
  })
  .openapi('ReducerCheckInput');

export const ReducerCheckReport = named('ReducerCheckReport', ReducerCheckReportContract);

export const reducerCheckRoute = createRoute({
  ...op('checkReducer', 'functions'),
  method: 'post',
  path: '/admin/reducers/check',
  summary:
    'Check a reducer artifact against stored runs (admin only): per run identical, or the first divergent delivery with both answers and a diff. At most 50 runs and 60 s per request.',
  request: { body: { required: true, content: json(ReducerCheckInput) } },
  responses: {
    200: { description: 'The per-run results and totals.', content: json(ReducerCheckReport) },
    ...errors(400, 403, 404, 409, 413, 415),
  },
});

export const ReducerUpgradeInput = z
  .object({
    function_path: FunctionPath,
    limit: z.number().int().min(1).max(MAX_CHECK_RUNS).default(20),
    time_budget_ms: z.number().int().min(100).max(MAX_CHECK_TIME_MS).default(20_000),
  })
  .strict()
  .openapi('ReducerUpgradeInput');

export const ReducerUpgradeReport = named('ReducerUpgradeReport', ReducerUpgradeReportContract);

export const reducerUpgradeRoute = createRoute({
  ...op('upgradeReducerRuns', 'functions'),
  method: 'post',
  path: '/admin/reducers/upgrade',
  summary:
    'Upgrade the runs paused reducer_changed on a path (admin only): each whose check against the artifact published now is identical is resumed accepting the change (one control per run, control_id upgrade:<hash>); the rest are refused with the divergence.',
  request: { body: { required: true, content: json(ReducerUpgradeInput) } },
  responses: {
    200: { description: 'Per run: upgraded or refused.', content: json(ReducerUpgradeReport) },
    ...errors(400, 403, 404, 413, 415),
  },
});
