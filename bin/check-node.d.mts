/** Types of bin/check-node.mjs (plain JavaScript so that it runs on any Node). */
export declare const REQUIRED_NODE_MAJOR: number;
/** The message refusing Node `version` at `execPath`, or null when it is new enough. */
export declare function nodeRefusal(version: string, execPath: string): string | null;
