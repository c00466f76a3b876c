/**
 * Reading `run_started.data.context` against the JSON Schema derived from the one zod
 * description (context-schema.ts). Lenient where the zod schema is strict, so a bad context
 * never stops a run:
 * - a setting that is absent takes its default;
 * - a number above its `maximum` counts as the maximum (max_retries 15 runs with 10);
 * - a setting that does not conform is dropped: it takes its default when it has one, with a
 *   `context_invalid` warning naming what was expected (a setting without a default, such as
 *   instructions or tools, is dropped silently);
 * - a tool entry whose required field (`name`) does not conform is skipped (`tool_invalid`); a
 *   bad optional field of an entry falls back silently; a second tool of the same name is skipped
 *   (`tool_duplicate`);
 * - a context that is not an object counts as {} (`context_invalid`).
 * The reducer's answer depends only on the context's JSON value, as before the schema existed.
 * docs/contracts/reducer.md, "Writing a deterministic reducer".
 */

import { CONTEXT_JSON_SCHEMA, type SchemaNode } from './context-json-schema.ts';
import type { AgentLoopSettings, AgentLoopToolSettings } from './context-schema.ts';
import { clone, isObject, type JsonRecord } from './json.ts';
import type { AgentLoopTool } from './state.ts';

/** What the reducer runs with: the settings, tools as the state keeps them. */
export type AgentLoopConfig = Omit<AgentLoopSettings, 'tools'> & { tools: AgentLoopTool[] };

/** Receives a warning about the context: `code` and a message for the diagnostic. */
export type ContextReport = (
  code: 'context_invalid' | 'tool_invalid' | 'tool_duplicate',
  message: string,
) => void;

/** Reads run_started.data.context; bad parts fall back to defaults, each reported once. */
export function readContext(raw: unknown, report: ContextReport): AgentLoopConfig {
  if (raw !== undefined && raw !== null && !isObject(raw)) {
    report('context_invalid', 'context is not an object; defaults used');
  }
  const context = isObject(raw) ? raw : {};
  const settings: JsonRecord = {};
  let tools: AgentLoopTool[] = [];
  for (const [key, node] of Object.entries(CONTEXT_JSON_SCHEMA.properties ?? {})) {
    const value = context[key];
    if (value === undefined) {
      if (node.default !== undefined) settings[key] = clone(node.default);
    } else if (key === 'tools') {
      if (Array.isArray(value) && node.items !== undefined) tools = readTools(node.items, value, report);
    } else if (conforms(node, value)) {
      settings[key] = atMost(node, value);
    } else if (node.default !== undefined) {
      settings[key] = clone(node.default);
      report('context_invalid', expectation(key, node));
    }
  }
  // What conforms to the schema derived from AgentLoopContext has its output type.
  return { ...(settings as Omit<AgentLoopSettings, 'tools'>), tools };
}

/**
 * The tool entries that have their required fields (`context.tools[i] has no name; skipped`),
 * the first of each name (`tool x is listed twice; first kept`), each read leniently.
 */
function readTools(node: SchemaNode, raw: unknown[], report: ContextReport): AgentLoopTool[] {
  const tools: AgentLoopTool[] = [];
  const seen = new Set<string>();
  for (let i = 0; i < raw.length; i++) {
    const item = raw[i];
    const missing = isObject(item) ? missingRequired(node, item) : (node.required?.[0] ?? 'fields');
    if (!isObject(item) || missing !== null) {
      report('tool_invalid', `context.tools[${i}] has no ${missing}; skipped`);
      continue;
    }
    const entry: JsonRecord = {};
    for (const [key, field] of Object.entries(node.properties ?? {})) {
      const value = item[key];
      if (value !== undefined && conforms(field, value)) entry[key] = atMost(field, value);
      else if (field.default !== undefined) entry[key] = clone(field.default);
    }
    // What conforms to the schema derived from AgentLoopToolEntry has its output type.
    const tool = toolOf(entry as AgentLoopToolSettings);
    if (seen.has(tool.name)) {
      report('tool_duplicate', `tool ${tool.name} is listed twice; first kept`);
      continue;
    }
    seen.add(tool.name);
    tools.push(tool);
  }
  return tools;
}

/** The first required field of `item` that is absent or does not conform, or null. */
function missingRequired(node: SchemaNode, item: JsonRecord): string | null {
  for (const key of node.required ?? []) {
    const field = node.properties?.[key];
    if (item[key] === undefined || (field !== undefined && !conforms(field, item[key]))) return key;
  }
  return null;
}

/** Whether `value` conforms to `node`, `maximum` aside (a number above it is clamped). */
function conforms(node: SchemaNode, value: unknown): boolean {
  switch (node.type) {
    case 'string':
      if (typeof value !== 'string') return false;
      if (node.minLength !== undefined && [...value].length < node.minLength) return false;
      break;
    case 'integer':
      if (!Number.isInteger(value)) return false;
      break;
    case 'number':
      if (typeof value !== 'number' || !Number.isFinite(value)) return false;
      break;
    case 'boolean':
      if (typeof value !== 'boolean') return false;
      break;
    case 'object':
      if (!isObject(value)) return false;
      break;
    case 'array':
      if (!Array.isArray(value)) return false;
      break;
  }
  if (node.enum !== undefined && !node.enum.includes(value)) return false;
  if (typeof value === 'number') {
    if (node.minimum !== undefined && value < node.minimum) return false;
    if (node.exclusiveMinimum !== undefined && value <= node.exclusiveMinimum) return false;
  }
  return true;
}

/** `value`, or the node's maximum when it is a number above it. */
function atMost(node: SchemaNode, value: unknown): unknown {
  return typeof value === 'number' && node.maximum !== undefined && value > node.maximum
    ? node.maximum
    : value;
}

/** The diagnostic text for a setting replaced by its default. */
function expectation(key: string, node: SchemaNode): string {
  if (node.enum !== undefined) return `${key} is not ${node.enum.join('|')}; ${String(node.default)} used`;
  let bound = '';
  if (node.minimum !== undefined) bound = ` >= ${node.minimum}`;
  else if (node.exclusiveMinimum !== undefined) bound = ` > ${node.exclusiveMinimum}`;
  const kind = node.type === 'integer' ? 'an integer' : `a ${node.type}`;
  return `${key} must be ${kind}${bound}`;
}

/** A tool entry as the state keeps it: replay_safe resolved, interruptible only when false. */
function toolOf(entry: AgentLoopToolSettings): AgentLoopTool {
  const { name, kind, schema, mutating, replay_safe = !mutating, ...rest } = entry;
  const tool: AgentLoopTool = { name, kind, schema, mutating, replay_safe, ...rest };
  if (tool.interruptible !== false) delete tool.interruptible;
  return tool;
}
