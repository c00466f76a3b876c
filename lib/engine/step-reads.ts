/**
 * What one step reads of its run's log and states, cached for the step: events and states it
 * staged itself, and what it read once. Reads ask the store for the version the step holds
 * (RunStore.readEvents `held`), so events that version's inline tail holds cost no request.
 * docs/architecture.md, "The step".
 */
import type { RunEvent, RunRecord } from '../contracts/index.ts';
import type { OperationReads } from './compaction.ts';
import type { EngineContext } from './deps.ts';

export class StepReads {
  readonly events = new Map<number, RunEvent>();
  readonly states = new Map<number, unknown>();
  readonly #ctx: EngineContext;

  constructor(ctx: EngineContext) {
    this.#ctx = ctx;
  }

  /** Forgets what was staged past `committed` (its last seq and state revision): never stored. */
  forgetPast(committed: Pick<RunRecord, 'last_seq' | 'state_rev'>, states = true): void {
    for (const seq of [...this.events.keys()]) if (seq > committed.last_seq) this.events.delete(seq);
    if (states)
      for (const rev of [...this.states.keys()]) if (rev > committed.state_rev) this.states.delete(rev);
  }

  /** Event `seq` of the run `base` holds (cached, or read with the page after it). Throws when missing. */
  async eventAt(base: RunRecord, seq: number): Promise<RunEvent> {
    const cached = this.events.get(seq);
    if (cached !== undefined) return cached;
    const page = await this.#ctx.store.readEvents(base.run_id, seq - 1, 100, base);
    for (const e of page) this.events.set(e.seq, e);
    const found = this.events.get(seq);
    if (found === undefined) throw new Error(`event ${seq} of run ${base.run_id} is missing`);
    return found;
  }

  /** Domain state revision `rev` (cached, or read at the record's `state_at` when it is base's). */
  async stateAt(base: RunRecord, rev: number): Promise<unknown> {
    if (this.states.has(rev)) return this.states.get(rev);
    const value = await this.#ctx.store.getState(
      base.run_id,
      rev,
      rev === base.state_rev ? base.state_at : undefined,
    );
    this.states.set(rev, value);
    return value;
  }

  /** Events from `fromSeq` to `toSeq` (at most `staged`'s last seq): cached, or read in one page. */
  async eventsFrom(base: RunRecord, staged: RunRecord, fromSeq: number, toSeq?: number): Promise<RunEvent[]> {
    const last = Math.min(toSeq ?? staged.last_seq, staged.last_seq);
    const missing: number[] = [];
    for (let s = fromSeq; s <= last; s += 1) if (!this.events.has(s)) missing.push(s);
    if (missing.length > 0) {
      const first = missing[0] as number;
      const page = await this.#ctx.store.readEvents(base.run_id, first - 1, last - first + 1, base);
      for (const e of page) this.events.set(e.seq, e);
    }
    const out: RunEvent[] = [];
    for (let s = fromSeq; s <= last; s += 1) {
      const e = this.events.get(s);
      if (e !== undefined) out.push(e);
    }
    return out;
  }

  /** What an operation reads, for the worker whose base and staged records `of` gives. */
  operationReads(of: () => { base: RunRecord; staged: RunRecord }): OperationReads {
    return {
      eventsFrom: (from, to) => this.eventsFrom(of().base, of().staged, from, to),
      state: (rev) => this.stateAt(of().base, rev),
    };
  }
}
