/**
 * The catalogue routes of the HTTP API: tool discovery (metadata only) and function artifacts
 * (admin): JavaScript, WebAssembly and Starlark reducers, validated before they are stored.
 * Reserved system paths (RESERVED_FUNCTION_PREFIXES) are refused to every caller: 403 reserved_path.
 * docs/contracts/tool-result.md ("Discovery returns metadata only").
 */
import { firstUnsafeIdChar } from '../contracts/clean-text.ts';
import { FunctionParams } from '../contracts/http-params.ts';
import type { ToolHost } from '../engine/ports.ts';
import {
  type ArtifactKind,
  type FunctionRegistry,
  isReservedFunctionPath,
  RESERVED_FUNCTION_PREFIXES,
} from '../sandbox/function-registry.ts';
import { DEFAULT_SANDBOX_LIMITS } from '../sandbox/limits.ts';
import { compileWasmReducer } from '../sandbox/wasm-module.ts';
import { HttpError, validationFailed } from './errors.ts';
import { type HttpApp, mediaTypeOf } from './middleware.ts';
import { getFunctionRoute, putFunctionRoute, toolsRoute } from './routes.ts';

/** The catalogue routes: tools (discovery) and function artifacts (admin). */
export function registerCatalogRoutes(
  app: HttpApp,
  tools: Pick<ToolHost, 'list'>,
  functions: FunctionRegistry,
): void {
  app.openapi(toolsRoute, async (c) => c.json({ tools: await tools.list() }, 200));

  app.openAPIRegistry.registerComponent('securitySchemes', 'bearerAuth', {
    type: 'http',
    scheme: 'bearer',
    description:
      'Locally: the token `agent-runs start` prints. In AWS: a JWT verified by the API Gateway authorizer, by default from the Cognito user pool of the stack (sub = user; the groups admin and system in cognito:groups, custom:role, or the scopes agent-runs/admin and agent-runs/system grant admin and system rights).',
  });
  // The document lists `/functions/{path}`; hono routes the slash-containing parameter itself.
  app.openAPIRegistry.registerPath(putFunctionRoute);
  app.openAPIRegistry.registerPath(getFunctionRoute);
  app.get('/functions/:path{.+}', async (c) => {
    const caller = c.get('caller');
    // An artifact's source is an admin's to read, as registering one is.
    if (caller.admin !== true && caller.principal.kind !== 'system') {
      throw new HttpError('unauthorized', 'reading function artifacts needs admin rights', {});
    }
    const params = FunctionParams.safeParse({ path: c.req.param('path') });
    if (!params.success) throw validationFailed('param', params.error.issues);
    const artifact = await functions.get(`/${params.data.path}`);
    if (artifact === null) {
      throw new HttpError('function_not_found', `no function artifact at /${params.data.path}`, {
        function_path: `/${params.data.path}`,
      });
    }
    return c.json(
      {
        function_path: artifact.function_path,
        kind: artifact.kind,
        hash: artifact.hash,
        size: artifact.bytes.byteLength,
        bytes_base64: Buffer.from(artifact.bytes).toString('base64'),
      },
      200,
    );
  });
  app.put('/functions/:path{.+}', async (c) => {
    const caller = c.get('caller');
    const requested = `/${c.req.param('path')}`;
    // Read-only for everyone, admins and system callers included; the body is not read.
    if (isReservedFunctionPath(requested)) {
      // The message names the path only when it is clean text: a control or invisible character in
      // it is not printed where the answer is shown (function_path carries it, JSON-escaped).
      const named = firstUnsafeIdChar(requested) === null ? requested : 'the requested path';
      throw new HttpError('reserved_path', `${named} is a reserved system path and cannot be written`, {
        function_path: requested,
        reserved_prefixes: RESERVED_FUNCTION_PREFIXES,
      });
    }
    if (caller.admin !== true && caller.principal.kind !== 'system') {
      throw new HttpError('unauthorized', 'registering functions needs admin rights', {});
    }
    const params = FunctionParams.safeParse({ path: c.req.param('path') });
    if (!params.success) throw validationFailed('param', params.error.issues);
    const kind = artifactKindOf(c.req.header('content-type'));
    const bytes = new Uint8Array(await c.req.arrayBuffer());
    await validateArtifactBytes(kind, bytes);
    const artifact = await functions.put(`/${params.data.path}`, kind, bytes);
    return c.json(
      {
        function_path: artifact.function_path,
        kind: artifact.kind,
        hash: artifact.hash,
        size: bytes.byteLength,
      },
      200,
    );
  });
}

/**
 * `application/javascript` (or `text/javascript`) → js; `application/wasm` → wasm;
 * `text/x-starlark` (or `application/x-starlark`) → star; else 415.
 */
function artifactKindOf(contentType: string | undefined): ArtifactKind {
  const type = mediaTypeOf(contentType);
  if (type === 'application/javascript' || type === 'text/javascript') return 'js';
  if (type === 'application/wasm') return 'wasm';
  if (type === 'text/x-starlark' || type === 'application/x-starlark') return 'star';
  throw new HttpError(
    'unsupported_media_type',
    'expected Content-Type application/javascript, application/wasm or text/x-starlark',
    {
      content_type: contentType ?? null,
    },
  );
}

/**
 * A JS or Starlark artifact must be UTF-8 (neither is parsed here: like a JavaScript syntax
 * error, a Starlark file that does not load pauses its runs with reducer_unavailable); a WASM
 * artifact must pass the sandbox's admission (a core module without imports, exporting memory
 * and alloc, with bounded memory). Empty bytes are left to the registry, whose
 * invalid_artifact names them.
 */
async function validateArtifactBytes(kind: ArtifactKind, bytes: Uint8Array): Promise<void> {
  if (bytes.byteLength === 0) return;
  if (kind === 'js' || kind === 'star') {
    try {
      new TextDecoder('utf-8', { fatal: true }).decode(bytes);
    } catch {
      const language = kind === 'js' ? 'JavaScript' : 'Starlark';
      throw new HttpError('invalid_artifact', `the ${language} artifact is not UTF-8`, {});
    }
    return;
  }
  const admitted = await compileWasmReducer(bytes, DEFAULT_SANDBOX_LIMITS);
  if ('kind' in admitted) {
    throw new HttpError('invalid_artifact', `the WebAssembly module is not admissible: ${admitted.reason}`, {
      reason: admitted.reason,
    });
  }
}
