/**
 * lib/tools: registry, policy gate, dispatcher (ToolHost) with the Lambda, HTTP and MCP adapters,
 * and the audit log. Results are normalized by lib/core's normalizeToolResult.
 * docs/architecture.md, "Code map"; docs/contracts/tool-result.md.
 */

export { errorClassForHttpStatus } from './adapters/http.ts';
export {
  AUDIT_EVENTS,
  type AuditEvent,
  type AuditEventName,
  type AuditLog,
  type AuditSink,
  createAuditLog,
} from './audit-log.ts';
export { canonicalJson, sha256OfCanonical } from './digest.ts';
export {
  isToolErrorClass,
  RETRYABLE_ERROR_CLASSES,
  TOOL_REGISTRATION_ERROR_CODES,
  ToolError,
  type ToolErrorOptions,
  ToolRegistrationError,
  type ToolRegistrationErrorCode,
  ToolsModuleError,
} from './errors.ts';
export { failedEnvelope } from './failed-envelope.ts';
export type {
  HttpHandler,
  LambdaHandler,
  LambdaInvoker,
  McpHandler,
  McpToolClient,
  ModuleHandler,
  ToolHandler,
  ToolInvocationContext,
  WireContext,
} from './handler-types.ts';
export {
  OpenAiFunctionTool,
  type OpenAiToolBinding,
  registerOpenAiFunctionTools,
} from './openai-functions.ts';
export {
  approvalDigest,
  createPolicyGate,
  GATE_DENY_CODES,
  type GateFacts,
  type PolicyGate,
  PolicyRule,
} from './policy-gate.ts';
export {
  type ArgumentError,
  createToolRegistry,
  type RegisteredTool,
  type ToolDefinition,
  type ToolMetadataInput,
  type ToolRegistry,
} from './registry.ts';
export { createToolHost, type SealedToolHost, type ToolFault, type ToolHostOptions } from './tool-host.ts';
