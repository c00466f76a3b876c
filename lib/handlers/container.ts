/**
 * What a Lambda container creates once and reuses across invocations: the Powertools
 * logger/metrics/tracer (at module load) and the runtime (engine, store, queue, SDK clients),
 * created lazily on the first invocation from the environment the CDK stack sets (TABLE_NAME,
 * STEP_QUEUE_URL, PAYLOAD_BUCKET; see lib/runtime.ts runtimeConfigFromEnv), with the stored function
 * registry functions/control.ts writes artifacts to, the tools of AGENT_RUNS_TOOLS
 * (lib/tools/configured.ts) and the models of lib/models/configured.ts. The engine's log
 * entries go through the Powertools Logger; the SDK clients are captured by the Tracer.
 * docs/architecture.md, "Bird's-eye view".
 */
import { builtInFunctions, createRuntime, type Runtime, runtimeConfigFromEnv } from '../runtime.ts';
import { storedFunctionRegistryFor } from '../sandbox/stored-registry.ts';
import { toolsFromEnv } from '../tools/configured.ts';
import { engineLog } from './observability.ts';
import { createObservability, type Observability, traceClients } from './powertools.ts';

export interface Container extends Observability {
  runtime: Runtime;
}

/**
 * Returns a function that yields this container's runtime and observability, creating the
 * runtime on the first call. Throws (on that call, and again on the next) if a required
 * environment variable is missing.
 */
export function lambdaContainer(serviceName: string, env: NodeJS.ProcessEnv = process.env): () => Container {
  const obs = createObservability(serviceName);
  let container: Container | undefined;
  return () => {
    if (container === undefined) {
      const config = runtimeConfigFromEnv(env);
      const registerTools = toolsFromEnv(env);
      const runtime = createRuntime({
        ...config,
        env,
        ...(registerTools !== undefined ? { registerTools } : {}),
        // Artifacts registered over HTTP (functions/control.ts) live in the table and bucket.
        functions: storedFunctionRegistryFor(config, builtInFunctions()),
        log: engineLog(obs.logger, obs.metrics),
      });
      traceClients(obs.tracer, runtime.clients);
      container = { ...obs, runtime };
    }
    return container;
  };
}
