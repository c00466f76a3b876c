/**
 * The secrets of tools registered as data (an HTTP or MCP tool's auth header): read at call
 * time through Powertools Parameters (Secrets Manager or SSM SecureString, cached `maxAge`
 * seconds), so a rotated secret reaches calls without a redeploy and no secret is ever stored
 * in the table, an environment variable, a view or a log.
 */
import type { SecretsProvider } from '@aws-lambda-powertools/parameters/secrets';
import type { SSMProvider } from '@aws-lambda-powertools/parameters/ssm';
import type { SecretRef } from '../contracts/index.ts';
import { ToolError } from './errors.ts';

/** Reads the value of one secret reference. Rejects with ToolError: transient tool_secret_unavailable, tool_error tool_secret_invalid. */
export type SecretResolver = (ref: SecretRef) => Promise<string>;

/** How long a secret is cached, in seconds. */
export const SECRET_MAX_AGE_SECONDS = 300;

/**
 * The resolver over Powertools' providers, each imported (with its SDK client) and created on
 * its first read, with the SDK's default configuration: a process that reads no tool secret
 * never loads them. A failed import rejects like a failed read.
 */
export function powertoolsSecrets(maxAge = SECRET_MAX_AGE_SECONDS): SecretResolver {
  let secrets: SecretsProvider | undefined;
  let ssm: SSMProvider | undefined;
  return async (ref) => {
    let value: unknown;
    try {
      if (ref.source === 'secrets_manager') {
        secrets ??= new (await import('@aws-lambda-powertools/parameters/secrets')).SecretsProvider();
        value = await secrets.get(ref.name, { maxAge });
      } else {
        ssm ??= new (await import('@aws-lambda-powertools/parameters/ssm')).SSMProvider();
        value = await ssm.get(ref.name, { maxAge, decrypt: true });
      }
    } catch (err) {
      throw new ToolError('transient', 'the tool credential could not be read', {
        code: 'tool_secret_unavailable',
        cause: err,
      });
    }
    if (typeof value !== 'string' || value === '') {
      throw new ToolError('tool_error', 'the tool credential is not a string', {
        code: 'tool_secret_invalid',
      });
    }
    return value;
  };
}
