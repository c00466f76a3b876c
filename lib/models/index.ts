/**
 * Model-turn functions (recorded, Bedrock Converse, OpenAI-compatible, any AI SDK model) and the
 * ModelHost adapter. docs/contracts/model-turn.md.
 */
export * from './ai-sdk.ts';
export * from './bedrock.ts';
export * from './errors.ts';
export * from './host.ts';
export * from './openai-compatible.ts';
export * from './recorded.ts';
export * from './types.ts';
