/**
 * Faults inside the DynamoDB adapter, for its integration tests on DynamoDB Local: a document
 * client that cancels chosen TransactWriteItems (TransactionConflict, throttling, which DynamoDB
 * Local cannot be made to produce), one whose Query results are edited (a read-committed Query
 * on real DynamoDB may show part of a commit still landing), and a DynamoDB RunStore on the
 * local services built over such a client.
 */

import {
  ProvisionedThroughputExceededException,
  TransactionCanceledException,
  TransactionConflictException,
} from '@aws-sdk/client-dynamodb';
import {
  type DynamoDBDocumentClient,
  PutCommand,
  QueryCommand,
  TransactWriteCommand,
  type TransactWriteCommandInput,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { inject } from 'vitest';
import { createAwsClients } from '../../lib/aws-clients.ts';
import { createS3BlobStore } from '../../lib/blobs/blob-store.ts';
import type { RunStore } from '../../lib/engine/ports.ts';
import { createDynamoRunStore, type DynamoRunStoreOptions } from '../../lib/store/dynamo-run-store.ts';
import { pageEntries } from '../../lib/store/item-codec.ts';
import { unpackBody } from '../../lib/store/record-codec.ts';

/** Which cancellation a faulty document client injects into a TransactWriteItems, or null to let it through. */
export type TransactFault = 'TransactionConflict' | 'ThrottlingError' | null;

/**
 * A DynamoDB document client that cancels the TransactWriteItems `plan` picks with a
 * TransactionCanceledException carrying `TransactionConflict` or `ThrottlingError`, before it
 * reaches DynamoDB Local (which cannot be made to produce either); and refuses the plain Put
 * (a commit's event page) it picks the way DynamoDB refuses a plain write for the same causes
 * (TransactionConflictException, ProvisionedThroughputExceededException). The store's own
 * classification and retry with backoff run as in production. `plan` sees the transaction's
 * items (a Put as a one-item list) and the number of such writes so far (from 1).
 */
export function faultyDoc(
  doc: DynamoDBDocumentClient,
  plan: (items: NonNullable<TransactWriteCommandInput['TransactItems']>, n: number) => TransactFault,
): DynamoDBDocumentClient & { readonly injected: number } {
  let n = 0;
  let injected = 0;
  // The last seq each run record item was written with: a record update's NEW events are its
  // tail's events past it (lib/store/event-tail.ts), shown to `plan` as a page of them.
  const written = new Map<string, number>();
  const send = doc.send.bind(doc) as (command: unknown) => Promise<unknown>;
  const plainFault = (code: Exclude<TransactFault, null>) => {
    injected += 1;
    const fault = { $metadata: {}, message: `injected ${code}` };
    return code === 'TransactionConflict'
      ? new TransactionConflictException(fault)
      : new ProvisionedThroughputExceededException(fault);
  };
  const proxy = new Proxy(doc, {
    get(target, prop, receiver) {
      if (prop === 'injected') return injected;
      if (prop !== 'send') return Reflect.get(target, prop, receiver);
      return async (command: unknown) => {
        if (command instanceof TransactWriteCommand) {
          n += 1;
          const items = command.input.TransactItems ?? [];
          const code = plan([...items, ...items.flatMap((i) => tailPage(written, i.Update))], n);
          if (code !== null) {
            injected += 1;
            throw new TransactionCanceledException({
              $metadata: {},
              message: `Transaction cancelled, please refer cancellation reasons for specific reasons [${code}]`,
              CancellationReasons: [{ Code: code, Message: `injected ${code}` }],
            });
          }
          const out = await send(command);
          for (const i of items) remember(written, i.Put?.Item, i.Update);
          return out;
        }
        if (command instanceof PutCommand) {
          n += 1;
          const code = plan(
            [{ Put: command.input }] as NonNullable<TransactWriteCommandInput['TransactItems']>,
            n,
          );
          if (code !== null) throw plainFault(code);
        }
        if (command instanceof UpdateCommand) {
          n += 1;
          const update = command.input as Update;
          const code = plan(
            [{ Update: update }, ...tailPage(written, update)] as NonNullable<
              TransactWriteCommandInput['TransactItems']
            >,
            n,
          );
          if (code !== null) throw plainFault(code);
          const out = await send(command);
          remember(written, undefined, update);
          return out;
        }
        return send(command);
      };
    },
  });
  return proxy as DynamoDBDocumentClient & { readonly injected: number };
}

type Update = { Key?: Record<string, unknown>; ExpressionAttributeValues?: Record<string, unknown> };

/** The record update's new tail events (past the last seq written), as a page item, or none. */
function tailPage(written: Map<string, number>, update: Update | undefined) {
  const body = update?.ExpressionAttributeValues?.[':body_z'];
  if (!(body instanceof Uint8Array)) return [];
  const pk = String(update?.Key?.pk);
  const tail = JSON.parse(unpackBody(body).tail) as { events: { seq: number; kind: string }[] };
  const fresh = tail.events.filter((e) => e.seq > (written.get(pk) ?? 0));
  return [{ Put: { TableName: 'tail', Item: { pk, sk: 'tail', events: fresh } } }];
}

/** Remembers the last seq a landed write gave a run record item. */
function remember(written: Map<string, number>, put: Record<string, unknown> | undefined, update?: Update) {
  if (put?.sk === 'R' && typeof put.last_seq === 'number') written.set(String(put.pk), put.last_seq);
  const seq = update?.ExpressionAttributeValues?.[':last_seq'];
  if (typeof seq === 'number') written.set(String(update?.Key?.pk), seq);
}

/**
 * A DynamoDB document client whose Query results pass through `edit` (with the number of
 * queries so far, from 1): e.g. one item of a commit left out, as a read-committed Query on
 * real DynamoDB may return while that commit is still landing (DynamoDB Local never does).
 */
export function editedQueries(
  doc: DynamoDBDocumentClient,
  edit: (items: Record<string, unknown>[], n: number) => Record<string, unknown>[],
): DynamoDBDocumentClient {
  let n = 0;
  const send = doc.send.bind(doc) as (command: unknown) => Promise<unknown>;
  return new Proxy(doc, {
    get(target, prop, receiver) {
      if (prop !== 'send') return Reflect.get(target, prop, receiver);
      return async (command: unknown) => {
        const out = await send(command);
        if (!(command instanceof QueryCommand)) return out;
        n += 1;
        const result = out as { Items?: Record<string, unknown>[] };
        return { ...result, Items: edit(result.Items ?? [], n) };
      };
    },
  });
}

/** The event kinds a transaction puts, in order, from its event pages (for a `faultyDoc` plan). */
export function eventKindsOf(items: NonNullable<TransactWriteCommandInput['TransactItems']>): string[] {
  return items.flatMap((i) => {
    const page = i.Put?.Item;
    const events = page === undefined ? [] : (pageEntries(page) as { kind?: string }[]);
    return events.flatMap((e) => (e.kind === undefined ? [] : [e.kind]));
  });
}

/**
 * A DynamoDB RunStore on the local services built over the given document-client wrapper;
 * `afterPage` is the store's crash hook between a plain commit's page and its record update;
 * `hooks` its crash hook between a plain create's subject and record, and its clock.
 */
export function localStore(
  wrapDoc: (doc: DynamoDBDocumentClient) => DynamoDBDocumentClient = (d) => d,
  afterPage?: (runId: string) => void,
  hooks: Pick<DynamoRunStoreOptions, 'afterClaim' | 'now'> = {},
): RunStore {
  const local = inject('localServices');
  const clients = createAwsClients(local);
  return createDynamoRunStore({
    doc: wrapDoc(clients.doc),
    tableName: local.tableName,
    blobs: createS3BlobStore(clients.s3, local.bucketName),
    sleep: (ms) => new Promise((r) => setTimeout(r, Math.min(ms, 20))),
    ...(afterPage !== undefined ? { afterPage } : {}),
    ...hooks,
  });
}
