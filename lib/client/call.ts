/**
 * The one request function a client is built on: a method, a path, a JSON or bytes body, the
 * run's capability, and the zod schema of the documented answer. Its own module so that the
 * client (client.ts) and the client-driven methods (client-driven.ts) share it without
 * importing each other.
 */
import type { z } from 'zod';

export interface Call<T extends z.ZodType> {
  method: 'GET' | 'POST' | 'PUT';
  path: string;
  query?: Record<string, string | number | undefined>;
  json?: unknown;
  body?: { bytes: Uint8Array; contentType: string };
  capability?: string | undefined;
  schema: T;
}

/** The one request function of a client: JSON or bytes in, the parsed documented shape out. */
export type CallFn = <T extends z.ZodType>(c: Call<T>) => Promise<z.infer<T>>;
