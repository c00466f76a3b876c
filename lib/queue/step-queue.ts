/**
 * StepQueue on SQS: one message `{run_id}` wakes a step worker for that run. docs/architecture.md,
 * "The step". A message is only a hint: the worker re-reads the run, so duplicates and stale
 * messages are harmless (a message that finds nothing to do is acknowledged).
 */
import { SendMessageBatchCommand, SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { z } from 'zod';
import { raisingStoreUnavailable, unavailableOr } from '../aws-faults.ts';
import type { StepQueue } from '../engine/ports.ts';

/** The body of a step message, as the step handler parses it (the StepQueue port's message). */
export const StepMessage = z.object({ run_id: z.string().min(1) });

/** The SQS StepQueue. Throws StoreUnavailable (retryable) when SQS is unreachable or throttles. */
export function createSqsStepQueue(sqs: SQSClient, queueUrl: string): StepQueue {
  let sent = 0;
  return raisingStoreUnavailable<StepQueue>(
    {
      async send(message, delaySeconds) {
        sent += 1;
        await sqs.send(
          new SendMessageCommand({
            QueueUrl: queueUrl,
            MessageBody: JSON.stringify(message),
            ...(delaySeconds !== undefined && delaySeconds > 0
              ? { DelaySeconds: Math.min(900, Math.ceil(delaySeconds)) }
              : {}),
          }),
        );
      },
      sent: () => sent,
    },
    'SQS',
  );
}

/** Sends many wake-ups in batches of 10 (the sweeper's waking pass). Throws StoreUnavailable as the queue does. */
export async function sendStepMessages(sqs: SQSClient, queueUrl: string, runIds: string[]): Promise<void> {
  for (let i = 0; i < runIds.length; i += 10) {
    const batch = runIds.slice(i, i + 10);
    await sqs
      .send(
        new SendMessageBatchCommand({
          QueueUrl: queueUrl,
          Entries: batch.map((run_id, j) => ({ Id: String(j), MessageBody: JSON.stringify({ run_id }) })),
        }),
      )
      .catch((err: unknown) => {
        throw unavailableOr(err, 'SQS');
      });
  }
}
