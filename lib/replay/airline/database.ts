/**
 * The airline database of the live replay world, copy-on-write: one deep-frozen base (the
 * benchmark's db/flights.json, reservations.json, users.json, loaded once and shared by every
 * conversation) and, per conversation, an AirlineStore holding only the records that
 * conversation created or changed, plus the receipts of its mutating calls.
 *
 * A change and its receipt are stored atomically: a commit builds the next snapshot (changed
 * records, their versions, the receipt keyed on the operation id) and installs it with one
 * assignment, so no reader ever sees the change without its receipt or the receipt without its
 * change. Tools run synchronously between begin and commit, so two dispatches of one operation
 * cannot interleave. docs/contracts/tool-result.md, "Tool calls" ("A mutating tool should use the
 * operation id as its idempotency key").
 *
 * Records keep the key order of the files: the tools print them with Python's json.dumps, whose
 * output follows insertion order (zod checks their shape; the parsed copy is not used, since it
 * would reorder keys).
 */
import { join } from 'node:path';
import { z } from 'zod';
import { canonicalJson } from '../../core/canonical.ts';
import { readDataFile } from '../../models/tau-bench.ts';

const FlightDate = z.looseObject({
  status: z.string(),
  available_seats: z.record(z.string(), z.number()).optional(),
  prices: z.record(z.string(), z.number()).optional(),
});
const Flight = z.looseObject({
  flight_number: z.string(),
  origin: z.string(),
  destination: z.string(),
  scheduled_departure_time_est: z.string(),
  scheduled_arrival_time_est: z.string(),
  dates: z.record(z.string(), FlightDate),
});
const ReservationFlight = z.looseObject({
  flight_number: z.string(),
  date: z.string(),
  price: z.number(),
  origin: z.string(),
  destination: z.string(),
});
const Payment = z.looseObject({ payment_id: z.string(), amount: z.number() });
const Reservation = z.looseObject({
  reservation_id: z.string(),
  user_id: z.string(),
  cabin: z.string(),
  flights: z.array(ReservationFlight),
  passengers: z.array(z.record(z.string(), z.unknown())),
  payment_history: z.array(Payment),
  nonfree_baggages: z.number(),
});
const PaymentMethod = z.looseObject({ source: z.string(), amount: z.number().optional(), id: z.string() });
const User = z.looseObject({
  payment_methods: z.record(z.string(), PaymentMethod),
  reservations: z.array(z.string()),
});

export type FlightDate = z.infer<typeof FlightDate>;
export type Flight = z.infer<typeof Flight>;
export type ReservationFlight = z.infer<typeof ReservationFlight>;
export type Payment = z.infer<typeof Payment>;
export type Reservation = z.infer<typeof Reservation>;
export type PaymentMethod = z.infer<typeof PaymentMethod>;
export type User = z.infer<typeof User>;

/** Stable code of {@link AirlineDatabaseError}. */
export const AIRLINE_DATABASE_INVALID = 'airline_database_invalid';

/** A database file is missing a field the tools rely on. Terminal. */
export class AirlineDatabaseError extends Error {
  override readonly name = 'AirlineDatabaseError';
  readonly code = AIRLINE_DATABASE_INVALID;
}

/** The shared, deep-frozen base: flights by number, reservations by id, users by id. */
export interface AirlineBase {
  readonly flights: ReadonlyMap<string, Flight>;
  readonly reservations: ReadonlyMap<string, Reservation>;
  readonly users: ReadonlyMap<string, User>;
}

/** What a mutating call left: the answer a re-dispatch under the same operation id gets. */
export interface Receipt {
  operation_id: string;
  tool: string;
  /** Canonical JSON of the args: a second call with the same id and other args is refused. */
  args: string;
  output: string;
  /** What the call read and wrote (versions as of its commit): its envelope is rebuilt from them. */
  reads: Access[];
  writes: Access[];
}

interface Snapshot {
  readonly reservations: ReadonlyMap<string, Reservation>;
  readonly users: ReadonlyMap<string, User>;
  /** Record path (`/reservations/ID`, `/users/ID`) → version; a base record is version 0. */
  readonly versions: ReadonlyMap<string, number>;
  readonly receipts: ReadonlyMap<string, Receipt>;
}

const EMPTY: Snapshot = {
  reservations: new Map(),
  users: new Map(),
  versions: new Map(),
  receipts: new Map(),
};

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}

function parseTable<T>(file: string, raw: unknown, schema: z.ZodType<T>): Map<string, T> {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new AirlineDatabaseError(`${file}: not a JSON object keyed by id`);
  }
  const table = new Map<string, T>();
  for (const [id, record] of Object.entries(raw)) {
    const parsed = schema.safeParse(record);
    if (!parsed.success) {
      throw new AirlineDatabaseError(`${file}: record ${id}: ${z.prettifyError(parsed.error)}`);
    }
    // The checked original, not the parsed copy: its key order is the output's.
    table.set(id, deepFreeze(record as T));
  }
  return table;
}

/**
 * Reads `dir/flights.json`, `dir/reservations.json`, `dir/users.json` (objects keyed by id) and
 * returns the frozen base. Throws AirlineDatabaseError when a record lacks a field the tools
 * use, or the fs / JSON error.
 */
export async function loadAirlineBase(dir: string): Promise<AirlineBase> {
  const read = async (name: string): Promise<unknown> =>
    JSON.parse(await readDataFile(join(dir, name))) as unknown;
  const [flights, reservations, users] = await Promise.all([
    read('flights.json'),
    read('reservations.json'),
    read('users.json'),
  ]);
  return {
    flights: parseTable('flights.json', flights, Flight),
    reservations: parseTable('reservations.json', reservations, Reservation),
    users: parseTable('users.json', users, User),
  };
}

/** A locator path of a record: `/reservations/ID`, `/users/ID`, `/flights/NUMBER`. */
export type RecordPath = `/${'reservations' | 'users' | 'flights'}/${string}`;

/** One read or write a tool made, for its envelope. */
export interface Access {
  path: RecordPath | '/flights';
  version?: number;
  action?: 'created' | 'updated';
}

/**
 * One tool execution's view: reads see this transaction's own writes first, then the store's
 * snapshot, then the base. `writable*` copies a record on first write (the base and the
 * snapshot are never changed in place). Records what was read and written.
 */
export class AirlineTransaction {
  readonly reads: Access[] = [];
  readonly #base: AirlineBase;
  readonly #snapshot: Snapshot;
  readonly #reservations = new Map<string, Reservation>();
  readonly #users = new Map<string, User>();
  readonly #created = new Set<string>();

  constructor(base: AirlineBase, snapshot: Snapshot) {
    this.#base = base;
    this.#snapshot = snapshot;
  }

  /** All flights, in file order (flights never change). */
  flights(): ReadonlyMap<string, Flight> {
    if (!this.reads.some((r) => r.path === '/flights')) this.reads.push({ path: '/flights' });
    return this.#base.flights;
  }

  flight(number: string): Flight | undefined {
    this.#read(`/flights/${number}`);
    return this.#base.flights.get(number);
  }

  reservation(id: string): Reservation | undefined {
    this.#read(`/reservations/${id}`);
    return (
      this.#reservations.get(id) ?? this.#snapshot.reservations.get(id) ?? this.#base.reservations.get(id)
    );
  }

  user(id: string): User | undefined {
    this.#read(`/users/${id}`);
    return this.#users.get(id) ?? this.#snapshot.users.get(id) ?? this.#base.users.get(id);
  }

  /** The reservation as a private copy this transaction may change; undefined when it does not exist. */
  writableReservation(id: string): Reservation | undefined {
    return writableCopy(this.#reservations, id, (key) => this.reservation(key));
  }

  /** The user as a private copy this transaction may change; undefined when it does not exist. */
  writableUser(id: string): User | undefined {
    return writableCopy(this.#users, id, (key) => this.user(key));
  }

  /** Stores a new reservation (one that exists already is replaced, as a dictionary assignment does). */
  createReservation(record: Reservation): void {
    const path = `/reservations/${record.reservation_id}`;
    if (this.reservation(record.reservation_id) === undefined) this.#created.add(path);
    this.#reservations.set(record.reservation_id, record);
  }

  /** The records this transaction wrote (copies it owns), by kind. */
  get changes(): { reservations: ReadonlyMap<string, Reservation>; users: ReadonlyMap<string, User> } {
    return { reservations: this.#reservations, users: this.#users };
  }

  isCreated(path: string): boolean {
    return this.#created.has(path);
  }

  startedFrom(snapshot: Snapshot): boolean {
    return this.#snapshot === snapshot;
  }

  versionOf(path: string): number {
    return this.#snapshot.versions.get(path) ?? 0;
  }

  #read(path: RecordPath): void {
    if (!this.reads.some((r) => r.path === path)) this.reads.push({ path, version: this.versionOf(path) });
  }
}

/** What a commit installed: the writes with their new versions. */
export interface Committed {
  writes: Access[];
}

/**
 * One conversation's private database over the shared base, with the receipts of its mutating
 * calls. Not shared between conversations.
 */
export class AirlineStore {
  readonly base: AirlineBase;
  #snapshot: Snapshot = EMPTY;

  constructor(base: AirlineBase) {
    this.base = base;
  }

  begin(): AirlineTransaction {
    return new AirlineTransaction(this.base, this.#snapshot);
  }

  receipt(operationId: string): Receipt | undefined {
    return this.#snapshot.receipts.get(operationId);
  }

  /**
   * Installs the transaction's changes and, when given, the receipt, in one step. The changed
   * records are frozen. Throws when the transaction did not start from the current snapshot
   * (a tool that awaited between begin and commit: a programming error, nothing is installed).
   */
  commit(tx: AirlineTransaction, receipt: Omit<Receipt, 'reads' | 'writes'> | undefined): Committed {
    if (!tx.startedFrom(this.#snapshot)) {
      throw new Error(
        'airline transaction committed over a newer snapshot (a tool awaited inside its transaction)',
      );
    }
    const { reservations, users } = tx.changes;
    const versions = new Map(this.#snapshot.versions);
    const writes: Access[] = [];
    const nextReservations = new Map(this.#snapshot.reservations);
    const nextUsers = new Map(this.#snapshot.users);
    for (const [id, record] of reservations) {
      const path: RecordPath = `/reservations/${id}`;
      nextReservations.set(id, deepFreeze(record));
      const version = (versions.get(path) ?? 0) + 1;
      versions.set(path, version);
      writes.push({ path, version, action: tx.isCreated(path) ? 'created' : 'updated' });
    }
    for (const [id, record] of users) {
      const path: RecordPath = `/users/${id}`;
      nextUsers.set(id, deepFreeze(record));
      const version = (versions.get(path) ?? 0) + 1;
      versions.set(path, version);
      writes.push({ path, version, action: 'updated' });
    }
    const receipts =
      receipt === undefined
        ? this.#snapshot.receipts
        : new Map(this.#snapshot.receipts).set(receipt.operation_id, { ...receipt, reads: tx.reads, writes });
    this.#snapshot = { reservations: nextReservations, users: nextUsers, versions, receipts };
    return { writes };
  }

  /** Ids of the records this conversation created or changed. */
  changedIds(): { reservations: string[]; users: string[] } {
    return { reservations: [...this.#snapshot.reservations.keys()], users: [...this.#snapshot.users.keys()] };
  }

  reservation(id: string): Reservation | undefined {
    return this.#snapshot.reservations.get(id) ?? this.base.reservations.get(id);
  }

  user(id: string): User | undefined {
    return this.#snapshot.users.get(id) ?? this.base.users.get(id);
  }

  /** Bytes this conversation holds over the base: its records and receipts as compact JSON. */
  privateBytes(): number {
    const { reservations, users, receipts } = this.#snapshot;
    let bytes = 0;
    for (const table of [reservations, users, receipts]) {
      for (const value of table.values()) bytes += JSON.stringify(value).length;
    }
    return bytes;
  }

  /** Number of receipts stored (one per mutating operation executed). */
  get receiptCount(): number {
    return this.#snapshot.receipts.size;
  }

  /**
   * The whole database as the benchmark holds it, `{flights, reservations, users}` (base with
   * this conversation's records over it; new reservations after the base ones). For files.
   */
  toJSON(): {
    flights: Record<string, Flight>;
    reservations: Record<string, Reservation>;
    users: Record<string, User>;
  } {
    const merged = <T>(base: ReadonlyMap<string, T>, own: ReadonlyMap<string, T>): Record<string, T> => {
      const out: Record<string, T> = {};
      for (const [id, record] of base) out[id] = own.get(id) ?? record;
      for (const [id, record] of own) if (!base.has(id)) out[id] = record;
      return out;
    };
    return {
      flights: Object.fromEntries(this.base.flights),
      reservations: merged(this.base.reservations, this.#snapshot.reservations),
      users: merged(this.base.users, this.#snapshot.users),
    };
  }
}

/** One record that differs between two stores over the same base. */
export interface RecordDifference {
  path: RecordPath;
  /** Canonical JSON on each side, null when the record does not exist there. */
  left: string | null;
  right: string | null;
}

/**
 * Compares two stores over the same base the way the benchmark compares databases: every
 * record equal, object key order ignored, list order kept (canonical JSON). Only records either
 * side changed can differ. Returns the differing records (empty: equal).
 */
export function compareStores(left: AirlineStore, right: AirlineStore): RecordDifference[] {
  const differences: RecordDifference[] = [];
  const l = left.changedIds();
  const r = right.changedIds();
  const text = (value: unknown): string | null => (value === undefined ? null : canonicalJson(value));
  for (const id of new Set([...l.reservations, ...r.reservations])) {
    const a = text(left.reservation(id));
    const b = text(right.reservation(id));
    if (a !== b) differences.push({ path: `/reservations/${id}`, left: a, right: b });
  }
  for (const id of new Set([...l.users, ...r.users])) {
    const a = text(left.user(id));
    const b = text(right.user(id));
    if (a !== b) differences.push({ path: `/users/${id}`, left: a, right: b });
  }
  return differences;
}

/** The copy of `read(id)` kept in `own` (cloned on first use, then the same one); undefined when `read` finds none. */
function writableCopy<T>(
  own: Map<string, T>,
  id: string,
  read: (id: string) => T | undefined,
): T | undefined {
  const kept = own.get(id);
  if (kept !== undefined) return kept;
  const current = read(id);
  if (current === undefined) return undefined;
  const copy = structuredClone(current);
  own.set(id, copy);
  return copy;
}
