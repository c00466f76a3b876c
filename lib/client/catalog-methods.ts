/**
 * The catalogue methods of the typed client (tools, function artifacts, the reducer-upgrade admin
 * routes) and the public routes (health, config, the OpenAPI document), each parsed with its
 * route's own answer schema (operations.ts). Errors: ApiError (`validation_failed` for a function
 * path without a leading "/", before any request).
 */
import { FunctionParams } from '../contracts/http-params.ts';
import type { CallFn } from './call.ts';
import { ApiError } from './errors.ts';
import { OPERATION_ANSWERS as ANSWERS } from './operations.ts';
import { ARTIFACT_MEDIA_TYPES, type FunctionArtifact } from './shapes.ts';

const enc = encodeURIComponent;

/** The catalogue methods (tools, function artifacts) and the public routes. */
export function catalogMethods(call: CallFn) {
  const functionRoute = (functionPath: string) =>
    `/functions/${functionPath.slice(1).split('/').map(enc).join('/')}`;
  // The path without its leading "/", checked with the route's own schema.
  const functionParams = (functionPath: string) => ({
    schema: FunctionParams,
    values: { path: functionPath.slice(1) },
  });
  return {
    listTools: async () =>
      (await call({ method: 'GET', path: '/v1/tools', schema: ANSWERS.listTools[200] })).tools,
    putFunction: (functionPath: string, bytes: Uint8Array, kind: FunctionArtifact['kind']) => {
      if (!functionPath.startsWith('/')) {
        return Promise.reject(
          new ApiError('validation_failed', 0, `function path must start with "/": ${functionPath}`),
        );
      }
      return call({
        method: 'PUT',
        path: functionRoute(functionPath),
        params: functionParams(functionPath),
        body: { bytes, contentType: ARTIFACT_MEDIA_TYPES[kind] },
        schema: ANSWERS.putFunction[200],
      });
    },
    getFunction: async (functionPath: string) => {
      if (!functionPath.startsWith('/'))
        throw new ApiError('validation_failed', 0, `function path must start with "/": ${functionPath}`);
      const found = await call({
        method: 'GET',
        path: functionRoute(functionPath),
        params: functionParams(functionPath),
        schema: ANSWERS.getFunction[200],
      });
      const { bytes_base64, ...artifact } = found;
      return { ...artifact, bytes: Uint8Array.from(atob(bytes_base64), (ch) => ch.charCodeAt(0)) };
    },
    checkReducer: (body: Record<string, unknown>) =>
      call({ method: 'POST', path: '/admin/reducers/check', json: body, schema: ANSWERS.checkReducer[200] }),
    upgradeReducerRuns: (body: Record<string, unknown>) =>
      call({
        method: 'POST',
        path: '/admin/reducers/upgrade',
        json: body,
        schema: ANSWERS.upgradeReducerRuns[200],
      }),
    getHealth: () => call({ method: 'GET', path: '/health', schema: ANSWERS.getHealth[200] }),
    getConfig: () => call({ method: 'GET', path: '/config', schema: ANSWERS.getConfig[200] }),
    getOpenApiDocument: () =>
      call({ method: 'GET', path: '/openapi.json', schema: ANSWERS.getOpenApiDocument[200] }),
  };
}
