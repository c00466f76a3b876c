/**
 * The run record's stored text, compressed: raw DEFLATE with a preset dictionary of the record's
 * own field names and common values, base64 in the record item's `record_z` attribute. A write
 * unit is 1 KB of item, and every commit rewrites the record: the JSON of a small run's record
 * (about 1.4 KB) is about 0.3 KB this way, so the record update of a commit costs one write
 * unit instead of two. The dictionary is part of the stored format: never edit it; a different
 * one needs another attribute name. DESIGN section 4.
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
