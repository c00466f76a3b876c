/** lib/http: the HTTP API (routes, auth, error mapping, OpenAPI document). */

export { MAX_WAIT_SECONDS } from '../contracts/http-params.ts';
export {
  API_VERSION,
  createHttpApp,
  DEFAULT_BODY_LIMIT_BYTES,
  DEFAULT_FUNCTION_BODY_LIMIT_BYTES,
  DEFAULT_POLL_INTERVAL_MS,
  type HttpApp,
  type HttpAppOptions,
  openApiDocument,
} from './app.ts';
export {
  ADMIN_SCOPE,
  type Authenticate,
  anyOf,
  authFromEnv,
  bearerTokenAuth,
  CALLER_GROUPS,
  CAPABILITY_HEADER,
  type HttpCaller,
  iamCallerAuth,
  type JwtClaimsAuthOptions,
  jwtClaimsAuth,
  LOCAL_PRINCIPAL,
  SYSTEM_SCOPE,
} from './auth.ts';
export { EMPTY_HEADER_VALUE, keepEmptyLastEventId } from './empty-headers.ts';
export {
  type ErrorBody,
  HTTP_ERROR_STATUS,
  HttpError,
  type HttpErrorCode,
  RETRY_AFTER_SECONDS,
  toHttpError,
  type ValidationIssue,
} from './errors.ts';
export { ROUTES } from './routes.ts';
export { DEFAULT_MAX_OPEN_WAITS, maxOpenWaitsFromEnv } from './wait-slots.ts';
