/**
 * The run record's stored text, compressed: raw DEFLATE with a preset dictionary of the record's
 * own field names and common values, base64 in the record item's `record_z` attribute. A write
 * unit is 1 KB of item, and every commit rewrites the record: the JSON of a small run's record
 * (about 1.4 KB) is about 0.3 KB this way, so the record update of a commit costs one write
 * unit instead of two. The dictionary is part of the stored format: never edit it; a different
 * one needs another attribute name. docs/reference/storage.md.
 */
import { deflateRawSync, inflateRawSync } from 'node:zlib';

/**
 * The preset dictionary (format 1): a typical record's JSON with the values that vary left out.
 * DEFLATE finds matches up to 32 KB back, nearer is cheaper: the most frequent parts come last.
 */
const RECORD_DICTIONARY_1 = Buffer.from(
  [
    '"objective":"executor_config":{},"parent_run_id":"parent_op_id":"quota_slot":"origin":',
    '"compaction_requested":true,"compaction":"large_results":[],"pause_requested":"',
    '"terminal_reason":"completed:succeeded","finished_at":"owed":[],"outcome":"succeeded","summary":"',
    '"status":"waiting","status":"queued","status":"paused","status":"failed","status":"stopped",',
    '"kind":"model_turn","effect":{"kind":"model_turn","instructions":"tools":[{"name":"description":"',
    '"open_requests":[{"request_id":"kind":"approval","kind":"input","subject_digest":"',
    '"queued_steers":[{"steer_id":"input":"at":',
    '"run_id":"run_","version":1,"created_at":17,"updated_at":17,"principal":{"kind":"user","id":"',
    '"subject":{"workspace":"path":"/"},"reducer":{"function_path":"/","artifact_hash":"',
    '"budgets":{},"on_exceeded":"pause","on_provider_outage":"pause",',
    '"usage":{"turns":0,"operations":0,"model_calls":0,"model_retries":0,"tool_calls":0,"input_tokens":0,"output_tokens":0},',
    '"counters":{"next_op":0,"next_req":0,"next_steer":0,"checkpoints":0,"consecutive_op_failures":0,"children":0},',
    '"epoch":1,"last_seq":1,"reduced_seq":1,"inbox":[],"turn":0,"state_rev":1,"state_at":"E#00000000000',
    '"projection":null,"unanswered_calls":[],"queued_steers":[],"depth":0,"live_children":[],',
    '"capability_hash":"","risk_tier":"standard","pinned":{"catalogue":0,"policy":0,"agents":0},"wake_at":null,',
    '"status":"running","lease":{"owner":"worker-","expires_at":17},',
    '"operation":{"op_id":"run_/op/1","kind":"tool_call","effect_id":"1:0",',
    '"effect":{"effect_id":"1:0","kind":"call_tool","tool":"","args":{},"mutating":false,"replay_safe":true,"interruptible":true},',
    '"replay_safe":true,"interruptible":true,"attempt":1,"started_at":17},"open_requests":[]}',
  ].join(''),
);

/** The stored form of a record's JSON text (format 1: DEFLATE, dictionary 1, base64). */
export function packRecord(text: string): string {
  return deflateRawSync(text, { dictionary: RECORD_DICTIONARY_1 }).toString('base64');
}

/** The record's JSON text back from its stored form. Throws on a corrupt value. */
export function unpackRecord(packed: string): string {
  return inflateRawSync(Buffer.from(packed, 'base64'), { dictionary: RECORD_DICTIONARY_1 }).toString();
}

/**
 * Format 2: the record's JSON and its inline event tail's JSON (event-tail.ts) in ONE DEFLATE
 * stream (raw, dictionary 2), stored as binary (`body_z`): a first byte 2 (the format), then
 * the compressed bytes of `{record json}\n{tail json}` (JSON.stringify never writes a raw
 * newline, so the first one separates the two). One stream: the events repeat the record's
 * operation ids, tools and effects, and each other, so ten operations' events add about 0.3 KB
 * to a record of about 0.6 KB. Binary, not base64: DynamoDB counts a binary's raw bytes.
 */
const RECORD_DICTIONARY_2 = Buffer.concat([
  RECORD_DICTIONARY_1,
  Buffer.from(
    [
      '{"first_seq":1,"events":[{"seq":1,"kind":"operation_started","at":17,"effect_id":"1:0","operation_id":"run_',
      '/op/1","data_json":"{\\"kind\\":\\"tool_call\\",\\"attempt\\":1,\\"tool\\":\\"',
      '{"seq":1,"kind":"reducer_answered","at":17,"data_json":"{\\"event_seq\\":1,\\"state_rev\\":1,\\"effects\\":[{\\"effect_id\\":\\"1:0\\",\\"kind\\":\\"call_tool\\"}]}"}',
      '{"seq":1,"kind":"tool_result","at":17,"effect_id":"1:0","operation_id":"run_',
      '/op/1","data_json":"{\\"tool\\":\\"\\",\\"envelope\\":{\\"envelope\\":\\"raisin.tool-result/1\\",\\"status\\":\\"succeeded\\",',
      '\\"reads\\":[],\\"writes\\":[],\\"artifact_refs\\":[],\\"evidence\\":[],\\"diagnostics\\":[],\\"suggested_next_actions\\":[],\\"payload\\":{',
      '],"states":[{"state_rev":1,"state_json":"{\\"',
    ].join(''),
  ),
]);

/** Format 2's first byte. */
const BODY_FORMAT_2 = 2;

/** The stored form (format 2) of a record's JSON text and its tail's JSON text. */
export function packBody(recordText: string, tailText: string): Uint8Array {
  return packPair(recordText, tailText);
}

/**
 * A flushed event page's stored form (`events_z`): its entries' JSON and its states' JSON in one
 * format 2 stream, as the tail they were in: a page of a few operations' events is about a
 * third of its plain size, so a flush is one write unit where it was two or three.
 */
export function packPageBody(eventsText: string, statesText: string): Uint8Array {
  return packPair(eventsText, statesText);
}

/** A page's entries' and states' JSON text back from `events_z`. Throws on a corrupt value. */
export function unpackPageBody(packed: Uint8Array): { events: string; states: string } {
  const { first, second } = unpackPair(packed);
  return { events: first, states: second };
}

function packPair(first: string, second: string): Uint8Array {
  const z = deflateRawSync(`${first}\n${second}`, { dictionary: RECORD_DICTIONARY_2 });
  const out = new Uint8Array(z.length + 1);
  out[0] = BODY_FORMAT_2;
  out.set(z, 1);
  return out;
}

/** The record's and the tail's JSON text back from format 2. Throws on a corrupt value. */
export function unpackBody(packed: Uint8Array): { record: string; tail: string } {
  const { first, second } = unpackPair(packed);
  return { record: first, tail: second };
}

function unpackPair(packed: Uint8Array): { first: string; second: string } {
  if (packed[0] !== BODY_FORMAT_2) throw new Error(`unknown stored body format ${packed[0]}`);
  const text = inflateRawSync(packed.subarray(1), { dictionary: RECORD_DICTIONARY_2 }).toString();
  const cut = text.indexOf('\n');
  if (cut < 0) throw new Error('a stored body without its second part');
  return { first: text.slice(0, cut), second: text.slice(cut + 1) };
}

/**
 * The order of the record's charge counters in its item's `metered` attribute: a JSON array of
 * numbers, not part of the compressed body, so that a commit can settle its own charge (the
 * units depend on the item's size, metering.ts) by rewriting this one short attribute instead of
 * compressing the record again. A counter added later goes at the end; a shorter array reads
 * the missing counters as 0. The list is the stored format's, written out here rather than taken
 * from core/prices.ts's arithmetic list: an edit there must never reorder stored data.
 * `record_item_bytes` and `record_index_keys` are not stored: they
 * are the item's own size and index keys, read from the item itself (item-codec.ts).
 */
export const METERED_COUNTERS = [
  'dynamodb_write_units',
  'dynamodb_read_units',
  'sqs_requests',
  'lambda_invocations',
  'lambda_ms',
  'lambda_gb_seconds',
  's3_put_requests',
  's3_get_requests',
] as const;

export type MeteredCounters = Record<(typeof METERED_COUNTERS)[number], number>;

/** The stored text of a record's charge counters (see METERED_COUNTERS). */
export function packMetered(counters: MeteredCounters): string {
  return JSON.stringify(METERED_COUNTERS.map((name) => counters[name]));
}

/** The counters of a stored `metered` attribute. Throws on a value that is not a list of numbers ≥ 0. */
export function unpackMetered(text: string): MeteredCounters {
  const values: unknown = JSON.parse(text);
  if (!Array.isArray(values) || values.some((v) => typeof v !== 'number' || !(v >= 0)))
    throw new Error('stored run record: metered is not a list of non-negative numbers');
  return Object.fromEntries(METERED_COUNTERS.map((name, i) => [name, values[i] ?? 0])) as MeteredCounters;
}
