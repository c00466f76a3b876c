/**
 * A pause or stop reason for people. A control sent without a reason gets core's default
 * (`paused by control`, `stopped by control`: lib/core/run-machine/controls.ts), which reads as if
 * a machine did it; it is read out as the person it was. Any other reason is shown as given. The
 * CLI and the console say the same words (console/src/model/words.ts). Pure.
 */

/** Core's default reasons of a control sent without one, as people read them. */
export const CONTROL_REASON_WORDS: Readonly<Record<string, string>> = {
  'paused by control': 'paused by a person (a pause control)',
  'stopped by control': 'stopped by a person (a stop control)',
};

/** `paused by control` → `paused by a person (a pause control)`; any other reason unchanged. */
export function controlReasonText(reason: string): string {
  return CONTROL_REASON_WORDS[reason] ?? reason;
}
