/** Every wire shape of the product as a zod schema; the public types are `z.infer` of these. */
export * from './checkpoint.ts';
export * from './client-driven.ts';
export * from './common.ts';
export * from './create-run.ts';
export * from './delegation.ts';
export * from './events.ts';
export * from './live.ts';
export * from './model-context.ts';
export * from './model-turn.ts';
export * from './reducer.ts';
export * from './run.ts';
export * from './tool-registration.ts';
export * from './tool-result.ts';
export * from './turn-outcome.ts';
