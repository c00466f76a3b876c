/**
 * The committed agent-loop artifact is what its TypeScript sources build to, and its hash is
 * pinned: a change to the sources (or to esbuild) that is not rebuilt and reviewed fails here.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { deriveSchemaNode } from '../../lib/reducers/agent-loop/context-json-schema.ts';
import { artifactHash, buildAgentLoop } from '../../lib/reducers/build.ts';
import { AGENT_LOOP_ARTIFACT_URL } from '../../lib/reducers/index.ts';

/**
 * sha256 of lib/reducers/agent-loop.js. To update it: change the sources, run
 * `npm run build:reducers`, paste the sha256 it prints here, and commit both. A new hash means a
 * new artifact: runs already bound to the old hash keep it (they see `changed` if it is gone).
 */
const AGENT_LOOP_SHA256 = '8170ee0fd94f7c37bdddaa3f078319289c0a18e8ca0ed2232170cbfe2d75cfe9';

const STALE = 'lib/reducers/agent-loop.js is stale: run `npm run build:reducers` and commit the result';

describe('the agent-loop artifact build', () => {
  it('rebuilds the committed artifact byte for byte from lib/reducers/agent-loop/', async () => {
    const committed = readFileSync(AGENT_LOOP_ARTIFACT_URL);
    const built = Buffer.from(await buildAgentLoop(), 'utf8');
    expect(built.equals(committed), STALE).toBe(true);
  });

  it('builds the same bytes every time', async () => {
    const [first, second] = await Promise.all([buildAgentLoop(), buildAgentLoop()]);
    expect(artifactHash(second)).toBe(artifactHash(first));
  });

  it('has the pinned sha256', () => {
    const committed = readFileSync(AGENT_LOOP_ARTIFACT_URL, 'utf8');
    expect(artifactHash(committed)).toBe(AGENT_LOOP_SHA256);
  });

  it('carries the JSON Schema derived from the context schema, without zod', async () => {
    const text = await buildAgentLoop();
    // timeout_ms is z.number().int().positive(): derived as {type: "integer", exclusiveMinimum: 0}.
    expect(text).toContain('timeout_ms:{type:"integer",exclusiveMinimum:0}');
    expect(text).not.toMatch(/zod|_zod|\$Zod/i);
  });

  it('refuses to derive a context schema with a rule the reducer cannot check', () => {
    expect(() => deriveSchemaNode(z.object({ id: z.string().regex(/^[a-z]+$/) }))).toThrow(/pattern/);
    expect(() => deriveSchemaNode(z.object({ limit: z.union([z.number(), z.string()]) }))).toThrow();
    expect(deriveSchemaNode(z.object({ limit: z.number().int().min(1) })).properties).toEqual({
      limit: { type: 'integer', minimum: 1 },
    });
  });
});
