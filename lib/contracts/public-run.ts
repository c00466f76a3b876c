/**
 * The run record and the checkpoint as the HTTP API answers them: the stored shapes (run.ts,
 * checkpoint.ts) without the fields only the store reads (STORAGE_FIELDS). The engine and the
 * stores keep the full shapes; lib/http answers these (`publicRun`, `publicCheckpoint`), and the
 * client parses with them, so a storage key never reaches a caller. A compatible change: each
 * field left out was optional. Plain zod, browser-safe.
 */
import { z } from 'zod';
import { Checkpoint } from './checkpoint.ts';
import {
  CancellingRun,
  CompletedRun,
  FailedRun,
  PausedRun,
  QueuedRun,
  RunningBetweenOperations,
  RunningWithOperation,
  type RunRecord,
  StoppedRun,
  WaitingRun,
} from './run.ts';

/**
 * The fields of the stored run record and checkpoint that the API never answers: `state_at`, the
 * sort key of the DynamoDB item holding the domain state of `state_rev` (read a state with
 * `GET /runs/{id}/state?rev=` instead). test/unit/public-shapes.test.ts fails when one of them
 * appears anywhere in the OpenAPI document.
 */
export const STORAGE_FIELDS = ['state_at'] as const;
export type StorageField = (typeof STORAGE_FIELDS)[number];

const hidden = { state_at: true } as const satisfies Record<StorageField, true>;

/**
 * A run record as the API answers it (`GET /runs/{id}`, `GET /runs`, the create, fork and
 * client-driven answers): the closed record of run.ts without STORAGE_FIELDS, a union by status.
 */
export const PublicRunRecord = z.union([
  QueuedRun.omit(hidden),
  RunningWithOperation.omit(hidden),
  RunningBetweenOperations.omit(hidden),
  WaitingRun.omit(hidden),
  PausedRun.omit(hidden),
  CancellingRun.omit(hidden),
  CompletedRun.omit(hidden),
  FailedRun.omit(hidden),
  StoppedRun.omit(hidden),
]);
export type PublicRunRecord = z.infer<typeof PublicRunRecord>;

/** A checkpoint as the API answers it (`GET /runs/{id}/checkpoints[/{n}]`): without STORAGE_FIELDS. */
export const PublicCheckpoint = Checkpoint.omit(hidden);
export type PublicCheckpoint = z.infer<typeof PublicCheckpoint>;

/** `record` without STORAGE_FIELDS (a shallow copy; no parse). */
export function publicRun(record: RunRecord): PublicRunRecord {
  const { state_at: _storageKey, ...rest } = record;
  return rest;
}

/** `checkpoint` without STORAGE_FIELDS (a shallow copy; no parse). */
export function publicCheckpoint(checkpoint: Checkpoint): PublicCheckpoint {
  const { state_at: _storageKey, ...rest } = checkpoint;
  return rest;
}

/** An answer carrying a run (`{run, ...}`: create, fork, the client-driven writes) with its run made public. */
export function withPublicRun<T extends { run: RunRecord }>(
  answer: T,
): Omit<T, 'run'> & { run: PublicRunRecord } {
  return { ...answer, run: publicRun(answer.run) };
}
