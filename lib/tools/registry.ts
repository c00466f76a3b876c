/**
 * The tool registry: explicit, opt-in registration of tools with a stable name, a semantic
 * version, an immutable input JSON Schema (compiled with ajv), a handler and bounded metadata;
 * sealed once the catalogue is complete. Discovery returns descriptors only.
 * docs/contracts/tool-result.md, "Tool registration".
 */
import type { ErrorObject, ValidateFunction } from 'ajv';
import validVersion from 'semver/functions/valid.js';
import type { z } from 'zod';
import { type ToolDescriptor, ToolMetadata, ToolRegistration } from '../contracts/index.ts';
import { lazySchemaDialects } from '../json-schema-dialects.ts';
import { ToolRegistrationError } from './errors.ts';
import type { ToolHandler } from './handler-types.ts';
import { deepFreeze, isPlainObject, toJson } from './json.ts';

/** Metadata as written at registration (defaults: risk low, timeout 30 s, 256 KiB output, approval never). */
export type ToolMetadataInput = z.input<typeof ToolMetadata>;

/** What an application registers. */
export interface ToolDefinition {
  /** Stable, non-blank, at most 128 characters, no surrounding whitespace; unique in the registry. */
  name: string;
  /** Semantic version 2.0.0, written exactly (no `v` prefix). */
  version: string;
  description?: string;
  /**
   * JSON Schema of the args (without `__raisin_context`). Draft 2020-12 when `$schema` names it,
   * otherwise draft-07 (a schema without `$schema` is read as draft-07). Unknown keywords are
   * ignored; `format` is checked (ajv-formats). Copied and frozen at registration.
   */
  input_schema: Record<string, unknown>;
  handler: ToolHandler;
  metadata: ToolMetadataInput;
}

/** One failed schema check of a call's args (schema wording only, never the value). */
export interface ArgumentError {
  /** JSON Pointer of the offending value, '' for the args object itself. */
  path: string;
  keyword: string;
  message: string;
}

/** A registered tool as the dispatcher sees it. */
export interface RegisteredTool {
  /** Frozen; what discovery lists. */
  readonly descriptor: ToolDescriptor;
  readonly handler: ToolHandler;
  /** Checks args (already without `__raisin_context`) against the input schema. Never throws. */
  validateArgs(args: unknown): { ok: true } | { ok: false; errors: ArgumentError[] };
}

export interface ToolRegistry {
  /**
   * Registers one tool and returns its descriptor. Throws ToolRegistrationError: invalid_name,
   * invalid_version, invalid_schema, invalid_metadata, invalid_definition (description or
   * handler), duplicate_name, registry_sealed.
   */
  register(definition: ToolDefinition): ToolDescriptor;
  /** Closes the catalogue; later registrations throw registry_sealed. Idempotent. */
  seal(): void;
  readonly sealed: boolean;
  get(name: string): RegisteredTool | undefined;
  /** Descriptors (name, version, description, input_schema, metadata) sorted by name; never handlers, URLs, headers or credentials. */
  list(): ToolDescriptor[];
}

/** At most this many argument errors are reported per call. */
const MAX_ARGUMENT_ERRORS = 20;

export function createToolRegistry(): ToolRegistry {
  // Built on the first registration (lib/json-schema-dialects.ts): the live and stream functions register none.
  const dialectOf = lazySchemaDialects();

  const tools = new Map<string, RegisteredTool>();
  let sealed = false;

  function compile(
    name: string,
    schema: unknown,
  ): { schema: Record<string, unknown>; validate: ValidateFunction } {
    const json = toJson(schema);
    if (!isPlainObject(schema) || json === null || !isPlainObject(json.value)) {
      throw new ToolRegistrationError('invalid_schema', name, 'input_schema must be a JSON object');
    }
    const copy = json.value;
    const dialect = dialectOf(copy);
    try {
      // ajv compiles from its own copy so the frozen descriptor schema is never touched.
      const validate = dialect.compile(structuredClone(copy));
      return { schema: deepFreeze(copy), validate };
    } catch (error) {
      throw new ToolRegistrationError('invalid_schema', name, 'input_schema is not a valid JSON Schema', {
        cause: error,
      });
    }
  }

  return {
    register(definition) {
      const name = typeof definition?.name === 'string' ? definition.name : String(definition?.name);
      if (sealed) throw new ToolRegistrationError('registry_sealed', name, 'the registry is sealed');
      const nameCheck = ToolRegistration.shape.name.safeParse(definition.name);
      if (!nameCheck.success || name !== name.trim()) {
        throw new ToolRegistrationError(
          'invalid_name',
          name,
          'name must be 1-128 characters, not blank, without surrounding whitespace',
        );
      }
      if (tools.has(name))
        throw new ToolRegistrationError('duplicate_name', name, `a tool named ${name} exists`);
      const { version } = definition;
      if (
        typeof version !== 'string' ||
        !ToolRegistration.shape.version.safeParse(version).success ||
        validVersion(version) !== version
      ) {
        throw new ToolRegistrationError(
          'invalid_version',
          name,
          'version must be a semantic version such as 1.2.3',
        );
      }
      const description = ToolRegistration.shape.description.safeParse(definition.description);
      if (!description.success) {
        throw new ToolRegistrationError(
          'invalid_definition',
          name,
          'description must be a string of at most 4000 characters',
        );
      }
      const metadata = ToolMetadata.safeParse(definition.metadata);
      if (!metadata.success) {
        throw new ToolRegistrationError(
          'invalid_metadata',
          name,
          `metadata is invalid: ${metadata.error.message}`,
        );
      }
      checkHandler(name, definition.handler);
      const { schema, validate } = compile(name, definition.input_schema);

      const descriptor: ToolDescriptor = deepFreeze({
        name,
        version,
        ...(description.data === undefined ? {} : { description: description.data }),
        input_schema: schema,
        metadata: metadata.data,
      });
      const handler = Object.freeze({ ...definition.handler });
      tools.set(name, {
        descriptor,
        handler,
        validateArgs(args) {
          if (validate(args)) return { ok: true };
          return {
            ok: false,
            errors: (validate.errors ?? []).slice(0, MAX_ARGUMENT_ERRORS).map(toArgumentError),
          };
        },
      });
      return descriptor;
    },
    seal() {
      sealed = true;
    },
    get sealed() {
      return sealed;
    },
    get(name) {
      return tools.get(name);
    },
    list() {
      return [...tools.values()]
        .map((tool) => tool.descriptor)
        .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    },
  };
}

function toArgumentError(error: ErrorObject): ArgumentError {
  return {
    path: error.instancePath,
    keyword: error.keyword,
    message: error.message ?? `fails ${error.keyword}`,
  };
}

function checkHandler(name: string, handler: ToolHandler | undefined): void {
  const fail = (why: string): never => {
    throw new ToolRegistrationError('invalid_definition', name, `handler ${why}`);
  };
  if (!isPlainObject(handler)) {
    fail('is missing');
    return;
  }
  switch (handler.kind) {
    case 'module':
      if (typeof handler.fn !== 'function') fail('fn must be a function');
      return;
    case 'lambda':
      if (typeof handler.function_name !== 'string' || handler.function_name.trim() === '') {
        fail('function_name must be a non-blank string');
      }
      return;
    case 'http': {
      let url: URL | null = null;
      try {
        url = new URL(handler.url);
      } catch {
        fail('url must be an absolute URL');
      }
      if (url !== null && url.protocol !== 'http:' && url.protocol !== 'https:') fail('url must be http(s)');
      if (
        handler.headers !== undefined &&
        !Object.values(handler.headers).every((v) => typeof v === 'string')
      ) {
        fail('headers must be strings');
      }
      return;
    }
    case 'mcp':
      if (typeof handler.client?.callTool !== 'function') fail('client must be an MCP client');
      if (typeof handler.tool_name !== 'string' || handler.tool_name.trim() === '')
        fail('tool_name must be non-blank');
      return;
    default:
      fail('kind must be module, lambda, http or mcp');
  }
}
