/**
 * Typed errors of the tools module, all under ToolsModuleError (a stable `code` and whether
 * retrying can help). Registration errors are thrown to the application that registers tools
 * (before the registry is sealed); ToolError is what a handler throws to report a classified
 * failure. docs/contracts/tool-result.md, "Tool registration" and "Invocation";
 * docs/contracts/tool-result.md, "The tool-result envelope" (the tool error algebra).
 * docs/architecture.md, "Conventions".
 */
import { TOOL_ERROR_CLASSES, type ToolErrorClass } from '../contracts/index.ts';

/**
 * The base of every error lib/tools throws: `code` is stable and machine-readable, `retryable`
 * says whether the same call may succeed later (true) or must be fixed first (false).
 */
export abstract class ToolsModuleError extends Error {
  abstract readonly code: string;
  abstract readonly retryable: boolean;
}

/** True when `value` is one of the 9 tool error classes. */
export function isToolErrorClass(value: unknown): value is ToolErrorClass {
  return typeof value === 'string' && (TOOL_ERROR_CLASSES as readonly string[]).includes(value);
}

/** Stable codes of ToolRegistrationError. */
export const TOOL_REGISTRATION_ERROR_CODES = [
  'invalid_name',
  'invalid_version',
  'invalid_schema',
  'invalid_metadata',
  'invalid_definition',
  'duplicate_name',
  'registry_sealed',
] as const;
export type ToolRegistrationErrorCode = (typeof TOOL_REGISTRATION_ERROR_CODES)[number];

/**
 * A registration was refused. `code` is one of TOOL_REGISTRATION_ERROR_CODES; `tool` names the
 * tool concerned (as given). Terminal: fix the definition, retrying does not help.
 */
export class ToolRegistrationError extends ToolsModuleError {
  override readonly name = 'ToolRegistrationError';
  readonly code: ToolRegistrationErrorCode;
  readonly retryable = false;
  readonly tool: string;

  constructor(code: ToolRegistrationErrorCode, tool: string, message: string, options?: ErrorOptions) {
    super(`${code}: ${message}`, options);
    this.code = code;
    this.tool = tool;
  }
}

/** Classes the dispatcher treats as retryable unless the thrower says otherwise. */
export const RETRYABLE_ERROR_CLASSES: ReadonlySet<ToolErrorClass> = new Set([
  'transient',
  'timeout',
  'rate_limited',
]);

/** A code a tool may attach to its error: short and made of identifier characters only. */
const TOOL_ERROR_CODE_PATTERN = /^[A-Za-z0-9_.:-]{1,64}$/;

export interface ToolErrorOptions extends ErrorOptions {
  /** Overrides the class's default (true for transient, timeout, rate_limited). */
  retryable?: boolean;
  /** A stable, machine-readable code (identifier characters, at most 64); defaults to the class. */
  code?: string;
}

/**
 * A classified tool failure. Thrown by a handler (or by the Lambda/HTTP/MCP adapters) it becomes a
 * failed envelope with `error_class` = `errorClass`, a diagnostic {code, message} and
 * `retry_policy.retryable`. Its message is meant for the caller and the model, so it must not
 * carry secrets; any other exception is reported only as a generic `tool_error`.
 */
export class ToolError extends ToolsModuleError {
  override readonly name = 'ToolError';
  readonly errorClass: ToolErrorClass;
  readonly retryable: boolean;
  readonly code: string;

  constructor(errorClass: ToolErrorClass, message: string, options: ToolErrorOptions = {}) {
    super(message, options);
    this.errorClass = errorClass;
    this.retryable = options.retryable ?? RETRYABLE_ERROR_CLASSES.has(errorClass);
    this.code =
      options.code !== undefined && TOOL_ERROR_CODE_PATTERN.test(options.code) ? options.code : errorClass;
  }
}
