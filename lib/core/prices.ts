/**
 * What a run costs in US dollars: the price tables (each price with its source and date) and the
 * pure arithmetic over a run's usage (model tokens) and its `metered` AWS requests. Also the
 * capacity-unit rules of DynamoDB the store meters with (lib/store/metering.ts).
 *
 * The tables are the public on-demand list prices of AWS us-east-1 (N. Virginia) and of the
 * model providers, as published on 2026-12-02 (read from copies of the public price pages; this
 * machine has no access to aws.amazon.com): no free tier, no volume tiers, no savings plans.
 * A deployment may pass its own tables (createEngine's `prices`). Wire and README: "Cost per run".
 */
import {
  DEFAULT_MODEL_TURN_FUNCTION,
  EMPTY_METERED,
  type Metered,
  type RunRecord,
  type UsageCost,
} from '../contracts/index.ts';

/** One list price: `usd` for every `per` of `unit`. */
export interface Price {
  usd: number;
  per: number;
  unit: string;
  source: string;
}

/** The AWS prices of one region. */
export interface AwsPriceTable {
  region: string;
  dynamodb_write_unit: Price;
  dynamodb_read_unit: Price;
  sqs_request: Price;
  lambda_request: Price;
  lambda_gb_second: Price;
  s3_put_request: Price;
  s3_get_request: Price;
}

/** A model's token prices. */
export interface ModelPrice {
  input: Price;
  output: Price;
}

export interface PriceTables {
  /** The date the prices were read (YYYY-MM-DD). */
  as_of: string;
  aws: AwsPriceTable;
  /** Token prices by model id. */
  models: Record<string, ModelPrice>;
  /** Model-turn function paths priced as a model of `models` (e.g. the recorded model: GPT-4o). */
  aliases: Record<string, string>;
}

export const PRICES_AS_OF = '2026-12-02';

const MILLION = 1_000_000;
const THOUSAND = 1_000;

/** AWS us-east-1 on-demand list prices (arm64 Lambda, SQS standard queue, S3 Standard). */
export const AWS_US_EAST_1: AwsPriceTable = {
  region: 'us-east-1',
  dynamodb_write_unit: {
    usd: 0.625,
    per: MILLION,
    unit: 'write request unit (on-demand)',
    source: 'https://aws.amazon.com/dynamodb/pricing/on-demand/',
  },
  dynamodb_read_unit: {
    usd: 0.125,
    per: MILLION,
    unit: 'read request unit (on-demand)',
    source: 'https://aws.amazon.com/dynamodb/pricing/on-demand/',
  },
  sqs_request: {
    usd: 0.4,
    per: MILLION,
    unit: 'request (standard queue, 64 KB chunk)',
    source: 'https://aws.amazon.com/sqs/pricing/',
  },
  lambda_request: {
    usd: 0.2,
    per: MILLION,
    unit: 'invocation',
    source: 'https://aws.amazon.com/lambda/pricing/',
  },
  lambda_gb_second: {
    usd: 0.0000133334,
    per: 1,
    unit: 'GB-second (arm64, first 7.5 billion GB-s a month)',
    source: 'https://aws.amazon.com/lambda/pricing/',
  },
  s3_put_request: {
    usd: 0.005,
    per: THOUSAND,
    unit: 'PUT request (S3 Standard)',
    source: 'https://aws.amazon.com/s3/pricing/',
  },
  s3_get_request: {
    usd: 0.0004,
    per: THOUSAND,
    unit: 'GET request (S3 Standard)',
    source: 'https://aws.amazon.com/s3/pricing/',
  },
};

const perMillionTokens = (usd: number, source: string): Price => ({
  usd,
  per: MILLION,
  unit: 'token',
  source,
});

/** Token list prices (USD per 1M tokens, standard tier, no caching or batch discounts). */
export const MODEL_PRICES: Record<string, ModelPrice> = {
  'gpt-4o': {
    input: perMillionTokens(2.5, 'https://openai.com/api/pricing/ (gpt-4o-2024-08-06)'),
    output: perMillionTokens(10, 'https://openai.com/api/pricing/ (gpt-4o-2024-08-06)'),
  },
  'gpt-4o-mini': {
    input: perMillionTokens(0.15, 'https://openai.com/api/pricing/'),
    output: perMillionTokens(0.6, 'https://openai.com/api/pricing/'),
  },
  'anthropic.claude-3-5-sonnet-20241022-v2:0': {
    input: perMillionTokens(3, 'https://aws.amazon.com/bedrock/pricing/ (us-east-1, on-demand)'),
    output: perMillionTokens(15, 'https://aws.amazon.com/bedrock/pricing/ (us-east-1, on-demand)'),
  },
  'anthropic.claude-3-5-haiku-20241022-v1:0': {
    input: perMillionTokens(0.8, 'https://aws.amazon.com/bedrock/pricing/ (us-east-1, on-demand)'),
    output: perMillionTokens(4, 'https://aws.amazon.com/bedrock/pricing/ (us-east-1, on-demand)'),
  },
  'amazon.nova-lite-v1:0': {
    input: perMillionTokens(0.06, 'https://aws.amazon.com/bedrock/pricing/ (us-east-1, on-demand)'),
    output: perMillionTokens(0.24, 'https://aws.amazon.com/bedrock/pricing/ (us-east-1, on-demand)'),
  },
  'amazon.nova-pro-v1:0': {
    input: perMillionTokens(0.8, 'https://aws.amazon.com/bedrock/pricing/ (us-east-1, on-demand)'),
    output: perMillionTokens(3.2, 'https://aws.amazon.com/bedrock/pricing/ (us-east-1, on-demand)'),
  },
};

/** The price tables a deployment uses unless it passes its own. */
export const DEFAULT_PRICES: PriceTables = {
  as_of: PRICES_AS_OF,
  aws: AWS_US_EAST_1,
  models: MODEL_PRICES,
  // The tau-bench recordings the replay serves were made by GPT-4o: priced as GPT-4o.
  aliases: { '/lib/models/recorded': 'gpt-4o' },
};

/**
 * `tables` with the deployment's model-turn functions priced as the models they call: each
 * configured path (and the contract's default path, when `defaultPath` is one of them) as its
 * model id.
 */
export function withConfiguredModels(
  tables: PriceTables,
  models: readonly { path: string; model: string }[],
  defaultPath: string | undefined,
): PriceTables {
  const aliases = { ...tables.aliases };
  for (const m of models) aliases[m.path] = m.model;
  const byDefault = models.find((m) => m.path === defaultPath);
  if (byDefault !== undefined) aliases[DEFAULT_MODEL_TURN_FUNCTION] = byDefault.model;
  return { ...tables, aliases };
}

// ---------------------------------------------------------------- DynamoDB capacity rules

/** Bytes per write request unit, and per read request unit. */
export const WRITE_UNIT_BYTES = 1024;
export const READ_UNIT_BYTES = 4096;

/**
 * Write request units of one write of an item: 1 per KB (rounded up, at least 1) of the larger
 * of its size before and after the write; twice that inside a transaction (TransactWriteItems).
 */
export function writeUnits(beforeBytes: number, afterBytes: number, transactional: boolean): number {
  const units = Math.max(1, Math.ceil(Math.max(beforeBytes, afterBytes) / WRITE_UNIT_BYTES));
  return transactional ? 2 * units : units;
}

/**
 * Read request units of reading `bytes` (one item of a GetItem, or the sum of the items a Query
 * read): 1 per 4 KB rounded up, half for an eventually consistent read. `atLeastOne`: a GetItem
 * costs a unit even for a missing item; a Query that read nothing costs none.
 */
export function readUnits(bytes: number, consistent: boolean, atLeastOne: boolean): number {
  const units = Math.ceil(bytes / READ_UNIT_BYTES);
  const counted = atLeastOne ? Math.max(1, units) : units;
  return consistent ? counted : counted / 2;
}

// ---------------------------------------------------------------- metering arithmetic

/** A charge: some of the metered counts (the record item's size and keys excluded: set, not added). */
export type MeterCharge = Partial<Omit<Metered, 'record_item_bytes' | 'record_index_keys'>>;

const ADDED = [
  'dynamodb_write_units',
  'dynamodb_read_units',
  'sqs_requests',
  'lambda_invocations',
  'lambda_ms',
  'lambda_gb_seconds',
  's3_put_requests',
  's3_get_requests',
] as const satisfies readonly (keyof MeterCharge)[];

/** Rounds away float noise (sums of fractional units and GB-seconds) at 1e-9. */
const clean = (x: number) => Math.round(x * 1e9) / 1e9;

/** `metered` (absent: zero) with `charge` added. */
export function addCharge(metered: Metered | undefined, charge: MeterCharge): Metered {
  const next: Metered = { ...EMPTY_METERED, ...metered };
  for (const k of ADDED) next[k] = clean(next[k] + (charge[k] ?? 0));
  return next;
}

/** The sum of two charges. */
export function sumCharges(a: MeterCharge, b: MeterCharge): MeterCharge {
  const out: MeterCharge = {};
  for (const k of ADDED) {
    const v = (a[k] ?? 0) + (b[k] ?? 0);
    if (v !== 0) out[k] = clean(v);
  }
  return out;
}

/** Lambda GB-seconds of `ms` milliseconds at `memoryMb` configured memory. */
export function gbSeconds(ms: number, memoryMb: number): number {
  return clean((ms / 1000) * (memoryMb / 1024));
}

// ---------------------------------------------------------------- cost

const priced = (quantity: number, price: Price) => (quantity * price.usd) / price.per;
/** Dollars kept to 1e-10 (a single read unit costs 1.25e-7). */
const usd = (x: number) => Math.round(x * 1e10) / 1e10;

/**
 * The price-table model a run's tokens are priced at: its model-turn function path
 * (`executor_config.model_turn_function`, else the contract's default) when an alias names it,
 * else the path's last segment when it is a model id of the table (`/lib/models/bedrock/{id}`);
 * null when the table has no price for it.
 */
export function modelPriceKey(
  record: Pick<RunRecord, 'executor_config'>,
  tables: PriceTables,
): string | null {
  const configured = record.executor_config.model_turn_function;
  const path = typeof configured === 'string' ? configured : DEFAULT_MODEL_TURN_FUNCTION;
  const alias = tables.aliases[path];
  if (alias !== undefined && tables.models[alias] !== undefined) return alias;
  const last = path.split('/').at(-1) ?? '';
  return tables.models[last] !== undefined ? last : null;
}

/**
 * What a run cost: its input and output tokens at its model's prices, its metered AWS requests
 * at the region's prices (Lambda duration as GB-seconds). Pure; dollars to 1e-10.
 */
export function costOf(
  record: Pick<RunRecord, 'usage' | 'metered' | 'executor_config'>,
  tables: PriceTables,
): UsageCost {
  const m = { ...EMPTY_METERED, ...record.metered };
  const model = modelPriceKey(record, tables);
  const modelPrice = model === null ? undefined : tables.models[model];
  const aws = tables.aws;
  const lines = {
    model_input_usd: usd(modelPrice ? priced(record.usage.input_tokens, modelPrice.input) : 0),
    model_output_usd: usd(modelPrice ? priced(record.usage.output_tokens, modelPrice.output) : 0),
    dynamodb_write_usd: usd(priced(m.dynamodb_write_units, aws.dynamodb_write_unit)),
    dynamodb_read_usd: usd(priced(m.dynamodb_read_units, aws.dynamodb_read_unit)),
    sqs_usd: usd(priced(m.sqs_requests, aws.sqs_request)),
    lambda_requests_usd: usd(priced(m.lambda_invocations, aws.lambda_request)),
    lambda_duration_usd: usd(priced(m.lambda_gb_seconds, aws.lambda_gb_second)),
    s3_usd: usd(
      priced(m.s3_put_requests, aws.s3_put_request) + priced(m.s3_get_requests, aws.s3_get_request),
    ),
  };
  const modelUsd = usd(lines.model_input_usd + lines.model_output_usd);
  const awsUsd = usd(
    lines.dynamodb_write_usd +
      lines.dynamodb_read_usd +
      lines.sqs_usd +
      lines.lambda_requests_usd +
      lines.lambda_duration_usd +
      lines.s3_usd,
  );
  return {
    currency: 'USD',
    total_usd: usd(modelUsd + awsUsd),
    model_usd: modelUsd,
    aws_usd: awsUsd,
    model,
    region: aws.region,
    prices_as_of: tables.as_of,
    lines,
  };
}

/** The run as a view shows it: its usage with its cost. */
export function withCost<R extends Pick<RunRecord, 'usage' | 'metered' | 'executor_config'>>(
  record: R,
  tables: PriceTables,
): R {
  return { ...record, usage: { ...record.usage, cost: costOf(record, tables) } };
}

/** Dollars per 1M operations of a total spent over `operations` (0 when there were none). */
export function perMillionOperations(totalUsd: number, operations: number): number {
  return operations === 0 ? 0 : usd((totalUsd / operations) * MILLION);
}
