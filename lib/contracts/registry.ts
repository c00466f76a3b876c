/**
 * The three registries a deployment manages as data, through the admin API and CLI: tools
 * (the catalogue), the tool policy, and agents. Each is a versioned set of named documents:
 * publishing a document makes a new registry version whose snapshot names the document
 * version of every entry; a published document version never changes (a change is a new
 * version). A run pins the registry versions it was admitted with.
 * docs/architecture.md, "The seams of a step" (versions pinned at admission; the policy gate);
 * docs/contracts/tool-result.md ("Tool registration", "Policy and authorization");
 * docs/contracts/run-lifecycle.md ("Subject, principal and admission": as_agent).
 */
import { z } from 'zod';
import { cleanId, refuseLookAlikeWorkspace } from './clean-text.ts';
import { Count, JsonObject } from './common.ts';
import { REGISTRY_KINDS } from './names.ts';
import { Principal } from './run.ts';
import { SEMVER_PATTERN, ToolMetadata, ToolRisk } from './tool-registration.ts';

/** The registries, as they appear in paths (`/admin/{kind}`) and pins. */
export { REGISTRY_KINDS } from './names.ts';
export const RegistryKind = z.enum(REGISTRY_KINDS);
export type RegistryKind = z.infer<typeof RegistryKind>;

/** A stable code: lowercase letters, digits and `_.:-`, at most 64 characters. */
const Code = z.string().regex(/^[a-z0-9_.:-]{1,64}$/, 'a code is 1-64 of a-z 0-9 _ . : -');
/** A name (tool, group, agent, workspace, principal id): no surrounding whitespace, no control character. */
const Name = cleanId(128).refine((s) => s.trim() === s, 'no surrounding whitespace');
const Names = z.array(Name).max(256);

// ---------------------------------------------------------------- tools

/** Where a secret lives: Secrets Manager (by name or ARN) or SSM Parameter Store (SecureString). */
export const SecretRef = z.strictObject({
  source: z.enum(['secrets_manager', 'ssm']),
  name: z.string().min(1).max(2048),
});
export type SecretRef = z.infer<typeof SecretRef>;

/** A Lambda function, invoked synchronously with `{args, context}`. */
export const LambdaToolTarget = z.strictObject({
  kind: z.literal('lambda'),
  function_arn: z
    .string()
    .regex(/^arn:aws[a-z-]*:lambda:[a-z0-9-]+:\d{12}:function:[A-Za-z0-9_-]{1,64}$/, 'a Lambda function ARN'),
  qualifier: z
    .string()
    .regex(/^[A-Za-z0-9$_-]{1,128}$/)
    .optional(),
});

/** The request header an HTTP tool's secret goes into (default `authorization`, as `Bearer <secret>`). */
export const HttpToolAuth = z.strictObject({
  secret: SecretRef,
  header: z
    .string()
    .regex(/^[A-Za-z0-9-]{1,64}$/)
    .default('authorization'),
  /** Prefix before the secret in the header (default `Bearer `; '' for the bare secret). */
  prefix: z.string().max(32).default('Bearer '),
});

/** An HTTPS endpoint receiving `POST {args, context}`; plain http only for loopback hosts. */
export const HttpToolTarget = z.strictObject({
  kind: z.literal('http'),
  url: z.url({ protocol: /^https?$/ }).refine((u) => {
    const url = new URL(u);
    return url.protocol === 'https:' || ['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname);
  }, 'url must be https (http only for 127.0.0.1, localhost, [::1])'),
  auth: HttpToolAuth.optional(),
});

/** A tool of an MCP server reached over Streamable HTTP. */
export const McpToolTarget = z.strictObject({
  kind: z.literal('mcp'),
  url: z.url({ protocol: /^https?$/ }),
  /** The tool's name on the server (default: the registered name). */
  tool_name: z.string().min(1).max(128).optional(),
  auth: HttpToolAuth.optional(),
});

export const ToolTarget = z.discriminatedUnion('kind', [LambdaToolTarget, HttpToolTarget, McpToolTarget]);
export type ToolTarget = z.infer<typeof ToolTarget>;

/** A tool as data: what `POST /admin/tools` publishes. The registry also compiles input_schema. */
export const ToolEntry = z.strictObject({
  name: Name,
  version: z.string().regex(SEMVER_PATTERN, 'version must be a semantic version (e.g. 1.2.3)'),
  description: z.string().max(4000).optional(),
  input_schema: JsonObject,
  metadata: ToolMetadata,
  target: ToolTarget,
});
export type ToolEntry = z.infer<typeof ToolEntry>;

// ---------------------------------------------------------------- policy

export const POLICY_EFFECTS = ['allow', 'deny', 'require_approval', 'transform_to_safer_action'] as const;

/**
 * One policy rule. It matches a call when every condition given holds (an absent condition
 * matches anything): tool name, principal kind or id, a group of the user, risk tier,
 * environment, mutating. `code` is the reason code the decision carries into the trace.
 * `transform_to_safer_action` names the safer tool (and args) offered instead of the call.
 */
export const PolicyRule = z.strictObject({
  effect: z.enum(POLICY_EFFECTS),
  /** The reason code (defaults: tool_denied_by_policy, approval_required_by_policy, allowed_by_policy, safer_action_required). */
  code: Code.optional(),
  tools: Names.optional(),
  risk: z.array(ToolRisk).optional(),
  principal_kinds: z.array(Principal.shape.kind).optional(),
  principal_ids: Names.optional(),
  /** Matches when the user (the principal, or the user an agent acts for) is in one of these groups. */
  groups: Names.optional(),
  /** Matches when the deployment's environment (AGENT_RUNS_ENVIRONMENT) is one of these. */
  environments: Names.optional(),
  mutating: z.boolean().optional(),
  /** transform_to_safer_action only: the safer call offered to the reducer. */
  safer: z.strictObject({ tool: Name, args: JsonObject.optional() }).optional(),
});
export type PolicyRule = z.input<typeof PolicyRule>;

/** The policy as data: ordered rules and what applies when none matches. */
export const PolicyDocument = z
  .strictObject({
    rules: z.array(PolicyRule).max(500),
    /** The decision when no rule matches (default allow). */
    default_effect: z.enum(['allow', 'deny']).default('allow'),
  })
  .refine(
    (p) => p.rules.every((r) => (r.effect === 'transform_to_safer_action') === (r.safer !== undefined)),
    { message: 'a transform_to_safer_action rule needs `safer`, and only it may have one', path: ['rules'] },
  );
export type PolicyDocument = z.infer<typeof PolicyDocument>;

// ---------------------------------------------------------------- agents

/**
 * An agent: whom it may act for (user ids, groups of the user) and its own tool rights (tool
 * names; `*` for every tool). Its calls also need the policy's consent for the user it acts for.
 */
export const AgentEntry = z.strictObject({
  agent_id: Name,
  description: z.string().max(4000).optional(),
  acts_for: z.strictObject({ users: Names.default([]), groups: Names.default([]) }),
  tools: Names,
});
export type AgentEntry = z.infer<typeof AgentEntry>;

// ---------------------------------------------------------------- workspaces

/** The workspace every user owns without a grant: `user:{id}`; no grant may name one. */
export const OWN_WORKSPACE_PREFIX = 'user:';

/**
 * A workspace grant: who may create runs in the workspace (and so learn that a subject in it has
 * a live run): user ids, groups of the user (as the verified token names them), and agents
 * acting for nobody. A workspace `user:{id}` is its user's own and cannot be granted, nor can
 * one starting with `user:` in any other case (`User:`, `USER:`: nobody's, core/workspaces.ts).
 */
export const WorkspaceGrant = z.strictObject({
  workspace: Name.refine(
    (w) => w.slice(0, OWN_WORKSPACE_PREFIX.length).toLowerCase() !== OWN_WORKSPACE_PREFIX,
    `a ${OWN_WORKSPACE_PREFIX}{id} workspace (in any case) is its user's own or nobody's and cannot be granted`,
  ).superRefine((w, ctx) => refuseLookAlikeWorkspace(ctx, [], w)),
  description: z.string().max(4000).optional(),
  users: Names.default([]),
  groups: Names.default([]),
  agents: Names.default([]),
});
export type WorkspaceGrant = z.infer<typeof WorkspaceGrant>;

// ---------------------------------------------------------------- stored shapes

/** One published document version: immutable. `digest` is sha256 of its canonical body. */
export const RegistryEntry = z.object({
  kind: RegistryKind,
  name: z.string().min(1),
  version: z.string().min(1),
  body: JsonObject,
  digest: z.string().regex(/^[0-9a-f]{64}$/),
  published_at: z.number(),
  published_by: Principal,
  /** The registry version this publication created. */
  registry_version: Count,
});
export type RegistryEntry = z.infer<typeof RegistryEntry>;

/** A registry version: which document version every entry has. Version 0 is the empty registry. */
export const RegistrySnapshot = z.object({
  kind: RegistryKind,
  version: Count,
  entries: z.record(z.string(), z.string()),
});
export type RegistrySnapshot = z.infer<typeof RegistrySnapshot>;

/** What `POST /admin/{kind}` answers: the entry's identity and the registry version it lives in. */
export const PublishResult = z.object({
  kind: RegistryKind,
  name: z.string(),
  version: z.string(),
  registry_version: Count,
  created: z.boolean(),
});
export type PublishResult = z.infer<typeof PublishResult>;

/** What `GET /admin/{kind}` answers: the current registry version and its documents. */
export const RegistryListing = z.object({
  kind: RegistryKind,
  registry_version: Count,
  entries: z.array(RegistryEntry),
});
export type RegistryListing = z.infer<typeof RegistryListing>;

/** What `GET /admin/{kind}/entry` answers: one published version and every version of its name, oldest first. */
export const RegistryEntryView = z.object({ entry: RegistryEntry, versions: z.array(z.string()) });
export type RegistryEntryView = z.infer<typeof RegistryEntryView>;
