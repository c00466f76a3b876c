/**
 * The registry routes in the typed client (admin): `POST /admin/{kind}` publishes a document as
 * a new immutable version (`created: false` when the same document was already published),
 * `GET /admin/{kind}` lists the current registry version, `GET /admin/{kind}/entry` reads one
 * published version with every version of its name. One method per operationId
 * (`publishTool`, `listToolEntries`, `getToolEntry`, ...), and the same three by kind
 * (`publishEntry(kind, ...)`, for callers that hold the kind as data). Errors: `unauthorized` (403, not an
 * admin), `validation_failed` (400), `registry_entry_not_found` (404).
 */
import type { z } from 'zod';
import { RegistryEntryQuery } from '../contracts/http-params.ts';
import type {
  AgentEntry,
  PolicyDocument,
  PublishResult,
  RegistryEntryView,
  RegistryKind,
  RegistryListing,
  ToolEntry,
  WorkspaceGrant,
} from '../contracts/index.ts';
import type { CallFn } from './call.ts';
import { OPERATION_ANSWERS as ANSWERS } from './operations.ts';

/** The registry methods, on `AgentRunsClient`. */
export interface RegistryMethods {
  /** Publishes a tool (name, semver, input schema, target, metadata). */
  publishTool(document: z.input<typeof ToolEntry>): Promise<PublishResult>;
  /** The current tools registry version and its documents. */
  listToolEntries(): Promise<RegistryListing>;
  /** One published tool version (default: the current one) and every version of `name`. */
  getToolEntry(name: string, version?: string): Promise<RegistryEntryView>;
  /** Publishes the tool policy (ordered rules, default effect). */
  publishPolicy(document: z.input<typeof PolicyDocument>): Promise<PublishResult>;
  /** The current policy registry version. */
  listPolicyEntries(): Promise<RegistryListing>;
  /** One published policy version and every version of `name`. */
  getPolicyEntry(name: string, version?: string): Promise<RegistryEntryView>;
  /** Publishes an agent (id, whom it may act for, its tool rights). */
  publishAgent(document: z.input<typeof AgentEntry>): Promise<PublishResult>;
  /** The current agents registry version. */
  listAgents(): Promise<RegistryListing>;
  /** One published agent version and every version of `name`. */
  getAgent(name: string, version?: string): Promise<RegistryEntryView>;
  /** Publishes a workspace grant (who may create runs in a workspace). */
  publishWorkspaceGrant(document: z.input<typeof WorkspaceGrant>): Promise<PublishResult>;
  /** The current workspace grants registry version. */
  listWorkspaceGrants(): Promise<RegistryListing>;
  /** One published workspace grant version and every version of `name`. */
  getWorkspaceGrant(name: string, version?: string): Promise<RegistryEntryView>;
  /** Publishes a document of registry `kind` (`POST /admin/{kind}`). */
  publishEntry(kind: RegistryKind, document: unknown): Promise<PublishResult>;
  /** The current registry version of `kind` and its documents. */
  listEntries(kind: RegistryKind): Promise<RegistryListing>;
  /** One published version (default: the current one) and every version of `name`, in registry `kind`. */
  getEntry(kind: RegistryKind, name: string, version?: string): Promise<RegistryEntryView>;
}

/** The registry methods on `call` (mixed into the client by `createClient`). */
export function registryMethods(call: CallFn): RegistryMethods {
  const publishEntry = (kind: RegistryKind, document: unknown) =>
    call({ method: 'POST', path: `/admin/${kind}`, json: document, schema: ANSWERS.publishTool[201] });
  const listEntries = (kind: RegistryKind) =>
    call({ method: 'GET', path: `/admin/${kind}`, schema: ANSWERS.listToolEntries[200] });
  const getEntry = (kind: RegistryKind, name: string, version?: string) =>
    call({
      method: 'GET',
      path: `/admin/${kind}/entry`,
      query: { name, version },
      querySchema: RegistryEntryQuery,
      schema: ANSWERS.getToolEntry[200],
    });
  return {
    publishTool: (document) => publishEntry('tools', document),
    listToolEntries: () => listEntries('tools'),
    getToolEntry: (name, version) => getEntry('tools', name, version),
    publishPolicy: (document) => publishEntry('policy', document),
    listPolicyEntries: () => listEntries('policy'),
    getPolicyEntry: (name, version) => getEntry('policy', name, version),
    publishAgent: (document) => publishEntry('agents', document),
    listAgents: () => listEntries('agents'),
    getAgent: (name, version) => getEntry('agents', name, version),
    publishWorkspaceGrant: (document) => publishEntry('workspaces', document),
    listWorkspaceGrants: () => listEntries('workspaces'),
    getWorkspaceGrant: (name, version) => getEntry('workspaces', name, version),
    publishEntry,
    listEntries,
    getEntry,
  };
}
