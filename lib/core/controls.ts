/**
 * The command digest used for control idempotency (who may send a control is
 * core/authority.ts). docs/contracts/run-lifecycle.md, "Controls" (acknowledgements).
 */
import type { Control } from '../contracts/index.ts';
import { digestOf } from './canonical.ts';

/**
 * The digest of a control's command (everything but control_id), over canonical JSON.
 * Same control_id + same digest → duplicate; same id + another digest → control_id_reused.
 */
export function controlDigest(control: Control): string {
  const { control_id: _id, ...command } = control;
  return digestOf(command);
}
