/**
 * Vitest globalSetup of the integration project: starts DynamoDB Local and fauxqs once per
 * test run, creates the table, queues and bucket, and provides their coordinates to the tests
 * as `inject('localServices')`. Stops both at teardown. docs/guides/local-stack.md, "How it stands
 * in for AWS".
 */
import type { TestProject } from 'vitest/node';
import type { StaticCredentials } from '../lib/aws-clients.ts';
import { ensureResources, type LocalResources } from '../lib/local/resources.ts';
import { startLocalServices } from '../lib/local/services.ts';

/** What integration tests receive: the endpoints (fit `createAwsClients`) plus the resources. */
export interface LocalTestServices extends LocalResources {
  dynamoEndpoint: string;
  sqsEndpoint: string;
  s3Endpoint: string;
  region: string;
  credentials: StaticCredentials;
}

declare module 'vitest' {
  export interface ProvidedContext {
    localServices: LocalTestServices;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const started = performance.now();
  const services = await startLocalServices();
  try {
    const resources = await ensureResources(services);
    const { stop: _stop, ...endpoints } = services;
    project.provide('localServices', { ...endpoints, ...resources });
  } catch (error) {
    await services.stop();
    throw error;
  }
  if (process.env.LOCAL_SERVICES_TIMING) {
    console.log(`local services ready in ${Math.round(performance.now() - started)} ms`);
  }
  return () => services.stop();
}
