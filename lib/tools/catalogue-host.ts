/**
 * The ToolHost of a deployment whose tools, policy and agents are data: every call is served by
 * the catalogue, policy and agents its run pinned at admission (ToolCallRequest.pinned), never
 * by what was published since. The host for one pin triple is built once from the registry
 * store (snapshots and entries are immutable, so a built host never goes stale: the "version
 * check" is the pin itself) and kept in a bounded cache; a build that fails (the store could
 * not be read) is not cached, so the next call tries again. Catalogue version 0 is the code's
 * tools alone and policy version 0 the code's rules (the default rule set); tools registered in
 * code are served at every catalogue version, beside the data tools (a data tool may not take a
 * code tool's name: the publication is refused). Discovery lists the current catalogue,
 * metadata only. docs/architecture.md, "The seams of a step" (versions pinned at admission);
 * docs/contracts/tool-result.md ("Discovery returns metadata only").
 */
import {
  AgentEntry,
  PolicyDocument,
  type RegistryKind,
  type RunPins,
  type ToolDescriptor,
  ToolEntry,
} from '../contracts/index.ts';
import type { Clock, RegistryStore, ToolHost } from '../engine/ports.ts';
import { agentAwareGate } from './agent-gate.ts';
import type { AuditLog } from './audit-log.ts';
import { ToolRegistrationError, ToolsModuleError } from './errors.ts';
import type { LambdaInvoker } from './handler-types.ts';
import { createPolicyGate, type PolicyRule } from './policy-gate.ts';
import { createToolRegistry, type RegisteredTool, type ToolRegistry } from './registry.ts';
import type { SecretResolver } from './secrets.ts';
import { toolDefinitionOfEntry } from './tool-entry.ts';
import { createToolHost, type ToolFault } from './tool-host.ts';

/** The name under which the policy document is published (one policy per deployment). */
export const POLICY_NAME = 'default';

/** The pins of a run admitted before anything was published. */
export const NO_PINS: RunPins = { catalogue: 0, policy: 0, agents: 0 };

export interface CatalogueHostOptions {
  /** The tools registered in code (sealed here). */
  code: ToolRegistry;
  /** The code's rules: the policy at policy version 0. */
  codePolicy?: readonly PolicyRule[];
  registries: RegistryStore;
  audit: AuditLog;
  secrets: SecretResolver;
  lambdaClient?: LambdaInvoker;
  clock?: Clock;
  /** The deployment's environment name, for rules with `environments`. */
  environment?: string;
  finalizeGraceMs?: number;
  debug?: (fault: ToolFault) => void;
  /** Hosts kept for distinct pin triples (default 32; the oldest built is dropped first). */
  cacheSize?: number;
}

/** A pinned registry version that is not in the store: the table lost an item it never deletes. */
export class CatalogueUnavailable extends ToolsModuleError {
  override name = 'CatalogueUnavailable';
  readonly code = 'catalogue_unavailable';
  readonly retryable = true;
}

/** The code's tools beside the data tools of one catalogue version (the data tools never shadow a code tool). */
function layered(code: ToolRegistry, data: ToolRegistry): ToolRegistry {
  return {
    register: (definition) => data.register(definition),
    seal: () => data.seal(),
    get sealed() {
      return data.sealed;
    },
    get: (name): RegisteredTool | undefined => code.get(name) ?? data.get(name),
    list: (): ToolDescriptor[] =>
      [...code.list(), ...data.list()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)),
  };
}

/** Builds the catalogue host. Does no I/O until a call arrives. */
export function createCatalogueToolHost(options: CatalogueHostOptions): ToolHost {
  const { code, registries } = options;
  code.seal();
  const cacheSize = options.cacheSize ?? 32;
  const hosts = new Map<string, Promise<ToolHost>>();

  /** The bodies of every entry of registry `kind` at `version`, by name. */
  async function bodiesAt(kind: RegistryKind, version: number): Promise<Map<string, unknown>> {
    const snapshot = await registries.snapshot(kind, version);
    if (snapshot === null) throw new CatalogueUnavailable(`${kind} registry version ${version} is missing`);
    const names = Object.entries(snapshot.entries);
    const entries = await Promise.all(names.map(([name, v]) => registries.entry(kind, name, v)));
    const bodies = new Map<string, unknown>();
    for (const [i, [name, v]] of names.entries()) {
      const entry = entries[i];
      if (entry === null || entry === undefined)
        throw new CatalogueUnavailable(`${kind} ${name} ${v} is missing`);
      bodies.set(name, entry.body);
    }
    return bodies;
  }

  async function build(pins: RunPins): Promise<ToolHost> {
    const [tools, policy, agents] = await Promise.all([
      bodiesAt('tools', pins.catalogue),
      bodiesAt('policy', pins.policy),
      bodiesAt('agents', pins.agents),
    ]);
    const data = createToolRegistry();
    for (const body of tools.values())
      data.register(toolDefinitionOfEntry(ToolEntry.parse(body), options.secrets));
    const policyBody = policy.get(POLICY_NAME);
    const document =
      policyBody === undefined
        ? { rules: [...(options.codePolicy ?? [])], default_effect: 'allow' as const }
        : PolicyDocument.parse(policyBody);
    const gate = createPolicyGate(document.rules, {
      default_effect: document.default_effect,
      ...(options.environment !== undefined ? { environment: options.environment } : {}),
    });
    const agentMap = new Map(
      [...agents.values()].map((b) => AgentEntry.parse(b)).map((a) => [a.agent_id, a]),
    );
    return createToolHost({
      registry: layered(code, data),
      gate: agentAwareGate(gate, agentMap),
      audit: options.audit,
      ...(options.lambdaClient !== undefined ? { lambdaClient: options.lambdaClient } : {}),
      ...(options.clock !== undefined ? { clock: options.clock } : {}),
      ...(options.finalizeGraceMs !== undefined ? { finalizeGraceMs: options.finalizeGraceMs } : {}),
      ...(options.debug !== undefined ? { debug: options.debug } : {}),
    });
  }

  function hostFor(pins: RunPins = NO_PINS): Promise<ToolHost> {
    const key = `${pins.catalogue}/${pins.policy}/${pins.agents}`;
    const cached = hosts.get(key);
    if (cached !== undefined) return cached;
    const built = build(pins);
    hosts.set(key, built);
    built.catch(() => hosts.delete(key));
    if (hosts.size > cacheSize) {
      const oldest = hosts.keys().next().value;
      if (oldest !== undefined) hosts.delete(oldest);
    }
    return built;
  }

  return {
    async list(pinned) {
      const pins = pinned ?? { ...NO_PINS, catalogue: await registries.head('tools') };
      return (await hostFor(pins)).list();
    },
    async gate(request) {
      return (await hostFor(request.pinned)).gate(request);
    },
    async execute(request, signal) {
      return (await hostFor(request.pinned)).execute(request, signal);
    },
    checkEntry(entry) {
      if (code.get(entry.name) !== undefined) {
        return {
          code: 'tool_name_reserved',
          message: `${entry.name} is a tool registered in code`,
          path: 'name',
        };
      }
      try {
        createToolRegistry().register(toolDefinitionOfEntry(entry, options.secrets));
        return null;
      } catch (err) {
        if (!(err instanceof ToolRegistrationError)) throw err;
        const path = { invalid_name: 'name', invalid_version: 'version', invalid_schema: 'input_schema' }[
          err.code as string
        ];
        return { code: 'validation_failed', message: err.message, path: path ?? 'metadata' };
      }
    },
  };
}
