/**
 * Managing the three registries (tools, policy, agents) as data: one shape for all three.
 * Publishing parses the document with its contract schema, names it (tool name, `default` for
 * the policy, agent id) and versions it (a tool's own semver; the next integer for the policy and
 * agents), then writes the entry, the new registry snapshot and the head in one transaction. A
 * published version never changes: publishing the same document again answers `created: false`
 * with the version it already has; a different document under a tool version that exists is
 * 409 version_immutable. Admin rights are checked by the caller of these functions (the HTTP
 * routes). docs/architecture.md, "The seams of a step" (versions pinned at admission);
 * docs/contracts/tool-result.md ("Tool registration": immutable input schema).
 */
import type { z } from 'zod';
import {
  AgentEntry,
  PolicyDocument,
  type Principal,
  type PublishResult,
  type RegistryEntry,
  type RegistryEntryView,
  type RegistryKind,
  type RegistryListing,
  ToolEntry,
  WorkspaceGrant,
} from '../contracts/index.ts';
import { digestOf } from '../core/canonical.ts';
import { contentionPause } from './commit-loop.ts';
import type { EngineDeps } from './deps.ts';
import { EngineError } from './errors.ts';
import { RegistryConflictError } from './ports.ts';

/** The name the policy document is published under (one policy per deployment). */
export const POLICY_ENTRY_NAME = 'default';

/** What differs between the registries: the document schema, its name and how it is versioned. */
interface KindRules {
  schema: z.ZodType<Record<string, unknown>>;
  nameOf(body: Record<string, unknown>): string;
  /** The version the document gives itself (tools), or null: the next integer after the latest. */
  ownVersion(body: Record<string, unknown>): string | null;
}

const KINDS: Record<RegistryKind, KindRules> = {
  tools: {
    schema: ToolEntry as unknown as z.ZodType<Record<string, unknown>>,
    nameOf: (b) => String(b.name),
    ownVersion: (b) => String(b.version),
  },
  policy: {
    schema: PolicyDocument as unknown as z.ZodType<Record<string, unknown>>,
    nameOf: () => POLICY_ENTRY_NAME,
    ownVersion: () => null,
  },
  agents: {
    schema: AgentEntry as unknown as z.ZodType<Record<string, unknown>>,
    nameOf: (b) => String(b.agent_id),
    ownVersion: () => null,
  },
  workspaces: {
    schema: WorkspaceGrant as unknown as z.ZodType<Record<string, unknown>>,
    nameOf: (b) => String(b.workspace),
    ownVersion: () => null,
  },
};

/** Attempts of a publication that keeps losing the head to concurrent publications. */
const PUBLISH_ATTEMPTS = 8;

/** The body, parsed (defaults applied) and checked; throws EngineError validation_failed / tool_name_reserved. */
async function parseBody(
  deps: EngineDeps,
  kind: RegistryKind,
  raw: unknown,
): Promise<Record<string, unknown>> {
  const parsed = KINDS[kind].schema.safeParse(raw);
  if (!parsed.success) {
    throw new EngineError('validation_failed', `invalid ${kind} document`, { issues: parsed.error.issues });
  }
  if (kind !== 'tools') return parsed.data;
  if (deps.tools.checkEntry === undefined) {
    throw new EngineError('unauthorized', 'this deployment does not serve tools registered as data', {});
  }
  const problem = await deps.tools.checkEntry(parsed.data as ToolEntry);
  if (problem === null) return parsed.data;
  if (problem.code === 'tool_name_reserved')
    throw new EngineError('tool_name_reserved', problem.message, { name: parsed.data.name });
  throw new EngineError('validation_failed', problem.message, {
    issues: [{ path: [problem.path], code: 'custom', message: problem.message }],
  });
}

/** The next integer version after the published ones (which, for the policy and agents, are integers). */
const nextVersion = (published: readonly string[]): string =>
  String(published.reduce((max, v) => Math.max(max, Number.parseInt(v, 10) || 0), 0) + 1);

/**
 * Publishes one document of registry `kind` as `publisher`. Returns the entry's name, version
 * and registry version (`created: false` when the same document was already published there).
 * Throws EngineError validation_failed (naming the field), tool_name_reserved, version_immutable,
 * store_unavailable (every attempt lost the head to another publication; retryable).
 */
export async function publishEntry(
  deps: EngineDeps,
  kind: RegistryKind,
  raw: unknown,
  publisher: Principal,
): Promise<PublishResult> {
  const body = await parseBody(deps, kind, raw);
  const rules = KINDS[kind];
  const name = rules.nameOf(body);
  const digest = digestOf(body);
  const reg = deps.registries;
  for (let attempt = 0; attempt < PUBLISH_ATTEMPTS; attempt += 1) {
    const head = await reg.head(kind);
    const [snapshot, published] = await Promise.all([reg.snapshot(kind, head), reg.versions(kind, name)]);
    if (snapshot === null)
      throw new EngineError('store_unavailable', `${kind} snapshot ${head} is missing`, {});
    const own = rules.ownVersion(body);
    const latest = published.at(-1);
    const same = own ?? latest;
    const existing = same === undefined ? null : await reg.entry(kind, name, same);
    if (existing !== null && existing.digest === digest) {
      return {
        kind,
        name,
        version: existing.version,
        registry_version: existing.registry_version,
        created: false,
      };
    }
    if (existing !== null && own !== null) {
      throw new EngineError(
        'version_immutable',
        `${name} ${own} is published and never changes: publish a new version`,
        {
          name,
          version: own,
        },
      );
    }
    const version = own ?? nextVersion(published);
    const entry: RegistryEntry = {
      kind,
      name,
      version,
      body,
      digest,
      published_at: deps.clock.now(),
      published_by: publisher,
      registry_version: head + 1,
    };
    try {
      await reg.publish(entry, {
        kind,
        version: head + 1,
        entries: { ...snapshot.entries, [name]: version },
      });
      return { kind, name, version, registry_version: head + 1, created: true };
    } catch (err) {
      if (!(err instanceof RegistryConflictError)) throw err;
      await contentionPause(attempt);
    }
  }
  throw new EngineError('store_unavailable', `the ${kind} registry is busy; retry`, {}, { retryable: true });
}

/** The current registry version of `kind` and every document in it (full documents: admin only). */
export async function listEntries(deps: EngineDeps, kind: RegistryKind): Promise<RegistryListing> {
  const reg = deps.registries;
  const head = await reg.head(kind);
  const snapshot = await reg.snapshot(kind, head);
  if (snapshot === null)
    throw new EngineError('store_unavailable', `${kind} snapshot ${head} is missing`, {});
  const found = await Promise.all(Object.entries(snapshot.entries).map(([n, v]) => reg.entry(kind, n, v)));
  const entries = found
    .filter((e): e is RegistryEntry => e !== null)
    .sort((a, b) => (a.name < b.name ? -1 : 1));
  return { kind, registry_version: head, entries };
}

/**
 * One published version of `name` (default: the one the current registry version names) and
 * every version published, oldest first. Throws EngineError registry_entry_not_found.
 */
export async function getEntry(
  deps: EngineDeps,
  kind: RegistryKind,
  name: string,
  version?: string,
): Promise<RegistryEntryView> {
  const reg = deps.registries;
  let wanted = version;
  if (wanted === undefined) {
    const snapshot = await reg.snapshot(kind, await reg.head(kind));
    wanted = snapshot?.entries[name];
  }
  const [entry, versions] = await Promise.all([
    wanted === undefined ? null : reg.entry(kind, name, wanted),
    reg.versions(kind, name),
  ]);
  if (entry === null) {
    throw new EngineError(
      'registry_entry_not_found',
      `no ${kind} entry ${name}${version ? ` ${version}` : ''}`,
      {
        name,
        ...(version !== undefined ? { version } : {}),
      },
    );
  }
  return { entry, versions };
}
