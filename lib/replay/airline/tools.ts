/**
 * The 14 tau-bench airline tools, written after the benchmark's reference implementations
 * (tau_bench/envs/airline/tools of sierra-research/tau-bench, the specification of their behaviour and of
 * every output character): same checks in the same order, same messages, same quirks (a
 * missing reservation reads "Error: user not found"; a one-stop search computes the next day
 * without zero padding and reads the second flight's seats on the first flight's date; a
 * change of flights keeps the reservation's cabin and leaves seat counts alone; a booking pays
 * certificates by deleting them). Outputs are Python's `json.dumps` text.
 *
 * A tool runs synchronously inside one AirlineTransaction and returns its output text. What the
 * reference lets escape as an exception (a KeyError, a ValueError) is returned as
 * `Error: {str(exception)}`, the benchmark's own rendering, and the changes made before it stay,
 * as they do in the benchmark's in-place dictionary. Args that do not fit the tool's schema get
 * `Error: ...` naming the field (the runtime's schema check normally refuses them first).
 */
import { z } from 'zod';
import { calculate as evaluateExpression, PythonError } from './calculator.ts';
import type { AirlineTransaction, Flight, FlightDate, Reservation, ReservationFlight } from './database.ts';
import { pythonFloat, pythonJson } from './python-text.ts';

/** One airline tool: its Python signature (for the benchmark's argument errors) and its body. */
export interface AirlineTool {
  name: string;
  /** Whether it may change the database (the six of the data set's README). */
  mutating: boolean;
  run(tx: AirlineTransaction, args: Readonly<Record<string, unknown>>): string;
}

/** `str(x)` of a Python int or float (an integral number prints as an int, see python-text.ts). */
function pyStr(n: number): string {
  return Number.isInteger(n) ? BigInt(n).toString() : pythonFloat(n);
}

/** `repr(s)` of a Python str without control characters. */
function pyRepr(s: string): string {
  if (s.includes("'") && !s.includes('"')) return `"${s}"`;
  return `'${s.replaceAll('\\', '\\\\').replaceAll("'", "\\'")}'`;
}

/** The KeyError a missing dictionary key raises: str(KeyError(k)) is repr(k). */
function keyError(key: string): PythonError {
  return new PythonError(pyRepr(key));
}

function has(record: object, key: string): boolean {
  return Object.hasOwn(record, key);
}

function item<T>(record: Readonly<Record<string, T>>, key: string): T {
  if (!has(record, key)) throw keyError(key);
  return record[key] as T;
}

/** Python's `int(s)` for a str: an optionally signed run of digits, blanks around it allowed. */
function pyInt(s: string): number {
  const trimmed = s.trim();
  if (!/^[+-]?\d+$/.test(trimmed))
    throw new PythonError(`invalid literal for int() with base 10: ${pyRepr(s)}`);
  return Number(trimmed);
}

/**
 * Checks args the way a Python call with **kwargs does (an unexpected name, then missing ones,
 * with Python's messages), then against the schema. Returns a private deep copy of the args
 * as given (not zod's output, which would reorder keys), or throws PythonError.
 */
function kwargs<S extends z.ZodType>(
  className: string,
  params: readonly string[],
  schema: S,
  args: Readonly<Record<string, unknown>>,
): z.infer<S> {
  const unexpected = Object.keys(args).find((k) => !params.includes(k));
  if (unexpected !== undefined) {
    throw new PythonError(`${className}.invoke() got an unexpected keyword argument ${pyRepr(unexpected)}`);
  }
  const missing = params.filter((p) => !has(args, p)).map(pyRepr);
  if (missing.length > 0) {
    const names =
      missing.length === 1
        ? missing[0]
        : missing.length === 2
          ? `${missing[0]} and ${missing[1]}`
          : `${missing.slice(0, -1).join(', ')}, and ${missing[missing.length - 1]}`;
    const noun = missing.length === 1 ? 'argument' : 'arguments';
    throw new PythonError(
      `${className}.invoke() missing ${missing.length} required positional ${noun}: ${names}`,
    );
  }
  const parsed = schema.safeParse(args);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const field = issue?.path.join('.') ?? '';
    throw new PythonError(`invalid argument ${field}: ${issue?.message ?? 'invalid'}`);
  }
  // The schema accepted these args; the copy keeps their key order for the output.
  return structuredClone(args) as z.infer<S>;
}

/**
 * Key orders of the nested records a call hands in, as the database lays them out
 * (reservations.json). The reference stores such a dict in the order the model wrote it; the
 * runtime does not keep the order of args keys (the reducer reads canonical JSON, RFC 8785),
 * so these tools put the keys a call supplied in the database's order, then any others as
 * received. Keys a tool adds later (a leg's price) go after them, as in the reference.
 */
const LEG_ORDER = ['origin', 'destination', 'flight_number', 'date', 'price'];
const PASSENGER_ORDER = ['first_name', 'last_name', 'dob'];
const PAYMENT_ORDER = ['payment_id', 'amount'];

function inRecordOrder<T extends Record<string, unknown>>(record: T, order: readonly string[]): T {
  const known = order.filter((k) => has(record, k));
  const rest = Object.keys(record).filter((k) => !order.includes(k));
  return Object.fromEntries([...known, ...rest].map((k) => [k, record[k]])) as T;
}

const FlightRef = z.looseObject({ flight_number: z.string(), date: z.string() });
const Passenger = z.looseObject({ first_name: z.string(), last_name: z.string(), dob: z.string() });
const PaymentRef = z.looseObject({ payment_id: z.string(), amount: z.number() });

const BookArgs = z.object({
  user_id: z.string(),
  origin: z.string(),
  destination: z.string(),
  flight_type: z.string(),
  cabin: z.string(),
  flights: z.array(FlightRef),
  passengers: z.array(Passenger),
  payment_methods: z.array(PaymentRef),
  total_baggages: z.number(),
  nonfree_baggages: z.number(),
  insurance: z.string(),
});

/** Checks one flight leg as book and update do; returns the leg's flight and date data or the error text. */
function checkLeg(
  tx: AirlineTransaction,
  leg: { flight_number: string; date: string },
  cabin: string,
  seatsNeeded: number,
): { flight: Flight; day: FlightDate } | string {
  const flight = tx.flight(leg.flight_number);
  if (flight === undefined) return `Error: flight ${leg.flight_number} not found`;
  if (!has(flight.dates, leg.date)) return `Error: flight ${leg.flight_number} not found on date ${leg.date}`;
  const day = item(flight.dates, leg.date);
  if (day.status !== 'available')
    return `Error: flight ${leg.flight_number} not available on date ${leg.date}`;
  if (item(day.available_seats ?? {}, cabin) < seatsNeeded) {
    return `Error: not enough seats on flight ${leg.flight_number}`;
  }
  return { flight, day };
}

const bookReservation: AirlineTool = {
  name: 'book_reservation',
  mutating: true,
  run(tx, raw) {
    const args = kwargs('BookReservation', Object.keys(BookArgs.shape), BookArgs, raw);
    const user = tx.user(args.user_id);
    if (user === undefined) return 'Error: user not found';
    // The reference assumes at most three bookings per task: the third id is reused after that.
    let reservationId = 'HATHAT';
    if (tx.reservation(reservationId) !== undefined) {
      reservationId = 'HATHAU';
      if (tx.reservation(reservationId) !== undefined) reservationId = 'HATHAV';
    }
    const flights = args.flights.map((leg) =>
      inRecordOrder(leg, LEG_ORDER),
    ) as unknown as ReservationFlight[];
    const passengers = args.passengers.map((p) => inRecordOrder(p, PASSENGER_ORDER));
    const payments = args.payment_methods.map((p) => inRecordOrder(p, PAYMENT_ORDER));
    const reservation: Reservation = {
      reservation_id: reservationId,
      user_id: args.user_id,
      origin: args.origin,
      destination: args.destination,
      flight_type: args.flight_type,
      cabin: args.cabin,
      flights,
      passengers,
      payment_history: payments,
      created_at: '2024-05-15T15:00:00',
      total_baggages: args.total_baggages,
      nonfree_baggages: args.nonfree_baggages,
      insurance: args.insurance,
    };
    const travellers = passengers.length;
    let total = 0;
    for (const leg of flights) {
      const priced = priceLeg(tx, leg, args.cabin, travellers);
      if (typeof priced === 'string') return priced;
      total += priced;
    }
    if (args.insurance === 'yes') total += 30 * travellers;
    total += 50 * args.nonfree_baggages;
    for (const payment of payments) {
      if (!has(user.payment_methods, payment.payment_id)) {
        return `Error: payment method ${payment.payment_id} not found`;
      }
      const method = item(user.payment_methods, payment.payment_id);
      if (method.source === 'gift_card' || method.source === 'certificate') {
        if (balance(method) < payment.amount) {
          return `Error: not enough balance in payment method ${payment.payment_id}`;
        }
      }
    }
    const paid = payments.reduce((sum, p) => sum + p.amount, 0);
    if (paid !== total) {
      return `Error: payment amount does not add up, total price is ${pyStr(total)}, but paid ${pyStr(paid)}`;
    }
    const payer = tx.writableUser(args.user_id);
    if (payer === undefined) throw keyError(args.user_id);
    for (const payment of payments) {
      const method = item(payer.payment_methods, payment.payment_id);
      if (method.source === 'gift_card') method.amount = balance(method) - payment.amount;
      else if (method.source === 'certificate') delete payer.payment_methods[payment.payment_id];
    }
    tx.createReservation(reservation);
    payer.reservations.push(reservationId);
    return pythonJson(reservation);
  },
};

function balance(method: { amount?: number | undefined }): number {
  if (method.amount === undefined) throw keyError('amount');
  return method.amount;
}

const CalculateArgs = z.object({ expression: z.string() });
const calculate: AirlineTool = {
  name: 'calculate',
  mutating: false,
  run(_tx, raw) {
    const args = kwargs('Calculate', ['expression'], CalculateArgs, raw);
    return evaluateExpression(args.expression);
  },
};

const ReservationIdArgs = z.object({ reservation_id: z.string() });
const cancelReservation: AirlineTool = {
  name: 'cancel_reservation',
  mutating: true,
  run(tx, raw) {
    const args = kwargs('CancelReservation', ['reservation_id'], ReservationIdArgs, raw);
    const reservation = tx.writableReservation(args.reservation_id);
    if (reservation === undefined) return 'Error: reservation not found';
    const refunds = reservation.payment_history.map((p) => ({ payment_id: p.payment_id, amount: -p.amount }));
    reservation.payment_history.push(...refunds);
    reservation.status = 'cancelled';
    return pythonJson(reservation);
  },
};

const getReservationDetails: AirlineTool = {
  name: 'get_reservation_details',
  mutating: false,
  run(tx, raw) {
    const args = kwargs('GetReservationDetails', ['reservation_id'], ReservationIdArgs, raw);
    const reservation = tx.reservation(args.reservation_id);
    // The reference's text for a missing reservation.
    return reservation === undefined ? 'Error: user not found' : pythonJson(reservation);
  },
};

const UserIdArgs = z.object({ user_id: z.string() });
const getUserDetails: AirlineTool = {
  name: 'get_user_details',
  mutating: false,
  run(tx, raw) {
    const args = kwargs('GetUserDetails', ['user_id'], UserIdArgs, raw);
    const user = tx.user(args.user_id);
    return user === undefined ? 'Error: user not found' : pythonJson(user);
  },
};

const AIRPORTS: readonly (readonly [string, string])[] = [
  ['SFO', 'San Francisco'],
  ['JFK', 'New York'],
  ['LAX', 'Los Angeles'],
  ['ORD', 'Chicago'],
  ['DFW', 'Dallas'],
  ['DEN', 'Denver'],
  ['SEA', 'Seattle'],
  ['ATL', 'Atlanta'],
  ['MIA', 'Miami'],
  ['BOS', 'Boston'],
  ['PHX', 'Phoenix'],
  ['IAH', 'Houston'],
  ['LAS', 'Las Vegas'],
  ['MCO', 'Orlando'],
  ['EWR', 'Newark'],
  ['CLT', 'Charlotte'],
  ['MSP', 'Minneapolis'],
  ['DTW', 'Detroit'],
  ['PHL', 'Philadelphia'],
  ['LGA', 'LaGuardia'],
];
const listAllAirports: AirlineTool = {
  name: 'list_all_airports',
  mutating: false,
  run(_tx, raw) {
    kwargs('ListAllAirports', [], z.object({}), raw);
    return pythonJson(new Map(AIRPORTS));
  },
};

const SearchArgs = z.object({ origin: z.string(), destination: z.string(), date: z.string() });

/** A flight's fields without `dates`, followed by one date's fields (Python's dict.update). */
function flightOn(flight: Flight, day: FlightDate): Record<string, unknown> {
  const { dates: _dates, ...fields } = flight;
  return { ...fields, ...day };
}

const searchDirectFlight: AirlineTool = {
  name: 'search_direct_flight',
  mutating: false,
  run(tx, raw) {
    const args = kwargs('SearchDirectFlight', ['origin', 'destination', 'date'], SearchArgs, raw);
    const results: Record<string, unknown>[] = [];
    for (const flight of tx.flights().values()) {
      if (flight.origin !== args.origin || flight.destination !== args.destination) continue;
      const day = has(flight.dates, args.date) ? item(flight.dates, args.date) : undefined;
      if (day?.status === 'available') results.push(flightOn(flight, day));
    }
    return pythonJson(results);
  },
};

const searchOnestopFlight: AirlineTool = {
  name: 'search_onestop_flight',
  mutating: false,
  run(tx, raw) {
    const args = kwargs('SearchOnestopFlight', ['origin', 'destination', 'date'], SearchArgs, raw);
    const { date } = args;
    const flights = tx.flights();
    const results: Record<string, unknown>[][] = [];
    for (const first of flights.values()) {
      if (first.origin !== args.origin) continue;
      for (const second of flights.values()) {
        if (second.destination !== args.destination || first.destination !== second.origin) continue;
        // As the reference: the next day is not zero-padded ("2024-05-6").
        const secondDate = first.scheduled_arrival_time_est.includes('+1')
          ? `2024-05-${pyInt(date.slice(-2)) + 1}`
          : date;
        if (first.scheduled_arrival_time_est > second.scheduled_departure_time_est) continue;
        if (!has(first.dates, date) || !has(second.dates, secondDate)) continue;
        if (item(first.dates, date).status !== 'available') continue;
        if (item(second.dates, secondDate).status !== 'available') continue;
        const leg1 = { ...flightOn(first, item(first.dates, date)), date };
        // As the reference: the second leg's date fields are read on the first leg's date.
        const leg2 = { ...flightOn(second, item(second.dates, date)), date: secondDate };
        results.push([leg1, leg2]);
      }
    }
    return pythonJson(results);
  },
};

const CertificateArgs = z.object({ user_id: z.string(), amount: z.number() });
const CERTIFICATE_IDS = ['certificate_3221322', 'certificate_3221323', 'certificate_3221324'];
const sendCertificate: AirlineTool = {
  name: 'send_certificate',
  mutating: true,
  run(tx, raw) {
    const args = kwargs('SendCertificate', ['user_id', 'amount'], CertificateArgs, raw);
    const user = tx.user(args.user_id);
    if (user === undefined) return 'Error: user not found';
    const paymentId = CERTIFICATE_IDS.find((id) => !has(user.payment_methods, id));
    // The reference returns None here (no text): this world says why instead.
    if (paymentId === undefined)
      return 'Error: the user already holds the three certificates this tool issues';
    const writable = tx.writableUser(args.user_id);
    if (writable === undefined) throw keyError(args.user_id);
    writable.payment_methods[paymentId] = { source: 'certificate', amount: args.amount, id: paymentId };
    return `Certificate ${paymentId} added to user ${args.user_id} with amount ${pyStr(args.amount)}.`;
  },
};

const think: AirlineTool = {
  name: 'think',
  mutating: false,
  run(_tx, raw) {
    kwargs('Think', ['thought'], z.object({ thought: z.string() }), raw);
    return '';
  },
};

const transferToHumanAgents: AirlineTool = {
  name: 'transfer_to_human_agents',
  mutating: false,
  run(_tx, raw) {
    kwargs('TransferToHumanAgents', ['summary'], z.object({ summary: z.string() }), raw);
    return 'Transfer successful';
  },
};

const BaggageArgs = z.object({
  reservation_id: z.string(),
  total_baggages: z.number(),
  nonfree_baggages: z.number(),
  payment_id: z.string(),
});
const updateReservationBaggages: AirlineTool = {
  name: 'update_reservation_baggages',
  mutating: true,
  run(tx, raw) {
    const args = kwargs(
      'UpdateReservationBaggages',
      ['reservation_id', 'total_baggages', 'nonfree_baggages', 'payment_id'],
      BaggageArgs,
      raw,
    );
    const current = tx.reservation(args.reservation_id);
    if (current === undefined) return 'Error: reservation not found';
    const price = 50 * Math.max(0, args.nonfree_baggages - current.nonfree_baggages);
    const refused = payForUpdate(tx, current.user_id, args.payment_id, price);
    if (refused !== null) return refused;
    const reservation = tx.writableReservation(args.reservation_id);
    if (reservation === undefined) throw keyError(args.reservation_id);
    reservation.total_baggages = args.total_baggages;
    reservation.nonfree_baggages = args.nonfree_baggages;
    if (price !== 0) reservation.payment_history.push({ payment_id: args.payment_id, amount: price });
    return pythonJson(reservation);
  },
};

/** Prices a leg being booked at today's fare in `cabin` (filling price, origin, destination): the total for the travellers, or the refusal. */
function priceLeg(
  tx: AirlineTransaction,
  leg: ReservationFlight,
  cabin: string,
  travellers: number,
): number | string {
  const checked = checkLeg(tx, leg, cabin, travellers);
  if (typeof checked === 'string') return checked;
  leg.price = item(checked.day.prices ?? {}, cabin);
  leg.origin = checked.flight.origin;
  leg.destination = checked.flight.destination;
  return leg.price * travellers;
}

/** The user's payment method `paymentId` (the caller checked it exists). */
function paymentMethod(tx: AirlineTransaction, userId: string, paymentId: string) {
  const user = tx.user(userId);
  if (user === undefined) throw keyError(userId);
  return item(user.payment_methods, paymentId);
}

/** Why `paymentId` cannot pay `amount` for a change to a reservation (the reference's messages), or null. */
function updatePaymentRefusal(
  tx: AirlineTransaction,
  userId: string,
  paymentId: string,
  amount: number,
): string | null {
  const user = tx.user(userId);
  if (user === undefined) throw keyError(userId);
  if (!has(user.payment_methods, paymentId)) return 'Error: payment method not found';
  const method = item(user.payment_methods, paymentId);
  if (method.source === 'certificate') return 'Error: certificate cannot be used to update reservation';
  if (method.source === 'gift_card' && balance(method) < amount)
    return 'Error: gift card balance is not enough';
  return null;
}

/**
 * Pays `amount` for a change to a reservation with `paymentId`: the refusal (updatePaymentRefusal),
 * or null once a gift card is charged (a credit card is not charged here, as in the reference).
 */
function payForUpdate(
  tx: AirlineTransaction,
  userId: string,
  paymentId: string,
  amount: number,
): string | null {
  const refused = updatePaymentRefusal(tx, userId, paymentId, amount);
  if (refused !== null) return refused;
  const method = paymentMethod(tx, userId, paymentId);
  if (method.source === 'gift_card' && amount !== 0) charge(tx, userId, paymentId, amount);
  return null;
}

/** Takes `amount` off a gift card (a negative amount tops it up, as in the reference). */
function charge(tx: AirlineTransaction, userId: string, paymentId: string, amount: number): void {
  const user = tx.writableUser(userId);
  if (user === undefined) throw keyError(userId);
  const method = item(user.payment_methods, paymentId);
  method.amount = balance(method) - amount;
}

const FlightsArgs = z.object({
  reservation_id: z.string(),
  cabin: z.string(),
  flights: z.array(FlightRef),
  payment_id: z.string(),
});
const updateReservationFlights: AirlineTool = {
  name: 'update_reservation_flights',
  mutating: true,
  run(tx, raw) {
    const args = kwargs(
      'UpdateReservationFlights',
      ['reservation_id', 'cabin', 'flights', 'payment_id'],
      FlightsArgs,
      raw,
    );
    const current = tx.reservation(args.reservation_id);
    if (current === undefined) return 'Error: reservation not found';
    const travellers = current.passengers.length;
    const flights = args.flights.map((leg) =>
      inRecordOrder(leg, LEG_ORDER),
    ) as unknown as ReservationFlight[];
    let total = 0;
    for (const leg of flights) {
      // A leg already booked, in the same cabin, keeps its price.
      const kept = current.flights.find(
        (f) => f.flight_number === leg.flight_number && f.date === leg.date && args.cabin === current.cabin,
      );
      if (kept !== undefined) {
        total += kept.price * travellers;
        leg.price = kept.price;
        leg.origin = kept.origin;
        leg.destination = kept.destination;
        continue;
      }
      const priced = priceLeg(tx, leg, args.cabin, travellers);
      if (typeof priced === 'string') return priced;
      total += priced;
    }
    total -= current.flights.reduce((sum, f) => sum + f.price, 0) * travellers;
    const refused = payForUpdate(tx, current.user_id, args.payment_id, total);
    if (refused !== null) return refused;
    const reservation = tx.writableReservation(args.reservation_id);
    if (reservation === undefined) throw keyError(args.reservation_id);
    reservation.flights = flights;
    if (total !== 0) reservation.payment_history.push({ payment_id: args.payment_id, amount: total });
    // As the reference: seat counts are not updated here.
    return pythonJson(reservation);
  },
};

const PassengersArgs = z.object({ reservation_id: z.string(), passengers: z.array(Passenger) });
const updateReservationPassengers: AirlineTool = {
  name: 'update_reservation_passengers',
  mutating: true,
  run(tx, raw) {
    const args = kwargs('UpdateReservationPassengers', ['reservation_id', 'passengers'], PassengersArgs, raw);
    const current = tx.reservation(args.reservation_id);
    if (current === undefined) return 'Error: reservation not found';
    if (args.passengers.length !== current.passengers.length)
      return 'Error: number of passengers does not match';
    const reservation = tx.writableReservation(args.reservation_id);
    if (reservation === undefined) throw keyError(args.reservation_id);
    reservation.passengers = args.passengers.map((p) => inRecordOrder(p, PASSENGER_ORDER));
    return pythonJson(reservation);
  },
};

/** The 14 tools by name. */
export const AIRLINE_TOOLS: ReadonlyMap<string, AirlineTool> = new Map(
  [
    bookReservation,
    calculate,
    cancelReservation,
    getReservationDetails,
    getUserDetails,
    listAllAirports,
    searchDirectFlight,
    searchOnestopFlight,
    sendCertificate,
    think,
    transferToHumanAgents,
    updateReservationBaggages,
    updateReservationFlights,
    updateReservationPassengers,
  ].map((t) => [t.name, t]),
);

/**
 * Runs `tool` in `tx` and returns its output text; a Python-level exception becomes
 * `Error: {message}` (the benchmark's rendering). Other exceptions propagate (bugs).
 */
export function runTool(
  tool: AirlineTool,
  tx: AirlineTransaction,
  args: Readonly<Record<string, unknown>>,
): string {
  try {
    return tool.run(tx, args);
  } catch (err) {
    if (err instanceof PythonError) return `Error: ${err.message}`;
    throw err;
  }
}
