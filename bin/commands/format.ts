/**
 * Human-readable output of the CLI: runs, run lists, events, acks, tools. Pure functions of the
 * API's shapes (the `--json` output is the API's JSON as is). Every string that came from the
 * API is passed through `printable` before it is shown, so that what a run stores cannot clear
 * the terminal or forge a line of the output.
 */

import { needsYouText, statusNoteText } from '../../console/src/model/list-words.ts';
import { controlReasonText } from '../../lib/client/reason-words.ts';
import type { Checkpoint, FunctionArtifact, RunAtSeq } from '../../lib/client/shapes.ts';
import {
  DEFAULT_CLI,
  DEFAULT_LEASE_TIMING,
  type LeaseTiming,
  type WaitingReason,
  waitingReasons,
} from '../../lib/client/waiting.ts';
import type {
  ControlAck,
  PublicRunRecord,
  RegistryListing,
  RunEvent,
  ToolDescriptor,
  UsageCost,
} from '../../lib/contracts/index.ts';
import { eventWords } from './event-words.ts';
import { printable, printableLines } from './printable.ts';
import { type PolicyView, policyEffect } from './tool-policy.ts';

export { printable, printableLines };

/** `HH:MM:SS.mmm` (UTC) of a ms epoch. */
export function clockTime(ms: number): string {
  return new Date(ms).toISOString().slice(11, 23);
}

/** Compact JSON cut to `max` characters. */
export function brief(value: unknown, max = 100): string {
  const text = JSON.stringify(value) ?? 'undefined';
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

function table(cells: string[][]): string {
  const rows = cells.map((r) => r.map(printable));
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length))) ?? [];
  return rows
    .map((r) =>
      r
        .map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd(widths[i] ?? 0)))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

export function formatUsage(run: PublicRunRecord): string {
  const u = run.usage;
  return `turns ${u.turns} · operations ${u.operations} · model calls ${u.model_calls} · tool calls ${u.tool_calls} · tokens ${u.input_tokens} in / ${u.output_tokens} out`;
}

/**
 * Dollars for people, in fixed decimals (never `4.00e-7`): cents from a cent up, else three
 * significant digits (`$0.000250`, `$0.000000400`).
 */
export function formatUsd(usd: number): string {
  if (usd === 0 || usd >= 0.01) return `$${usd.toFixed(2)}`;
  const digits = Math.min(20, 2 - Math.floor(Math.log10(usd)));
  return `$${usd.toFixed(digits)}`;
}

/** A run's cost: the total, then model and AWS, then the AWS lines (prices of their date). */
export function formatCost(c: UsageCost): string {
  const l = c.lines;
  const aws = [
    ['DynamoDB', l.dynamodb_write_usd + l.dynamodb_read_usd],
    ['Lambda', l.lambda_requests_usd + l.lambda_duration_usd],
    ['SQS', l.sqs_usd],
    ['S3', l.s3_usd],
  ] as const;
  return `${formatUsd(c.total_usd)} (model ${c.model ?? 'unpriced'} ${formatUsd(c.model_usd)} · AWS ${formatUsd(c.aws_usd)}: ${aws
    .map(([k, v]) => `${k} ${formatUsd(v)}`)
    .join(', ')}; ${c.region} prices of ${c.prices_as_of})`;
}

/** One open request, with what a person needs to answer it (the commands are under "waiting"). */
export function formatRequest(r: PublicRunRecord['open_requests'][number]): string {
  return printable(requestLine(r));
}

/**
 * `text` as printed lines: a newline it carries starts a continuation line under `indent` (so no
 * line of it can pass for one of the CLI's own); every other control character is escaped.
 */
export function continuedLines(text: string, indent: string): string[] {
  const [first = '', ...rest] = text.split(/\r\n|\n|\r/);
  return [printable(first), ...rest.map((line) => `${indent}${printable(line)}`)];
}

/** An open request for `runs get`: formatRequest's line, a newline in its text continued under `indent`. */
function requestBlock(r: PublicRunRecord['open_requests'][number], indent: string): string {
  return continuedLines(requestLine(r), indent).join('\n');
}

function requestLine(r: PublicRunRecord['open_requests'][number]): string {
  switch (r.kind) {
    case 'approval':
      return `approval ${r.request_id}: ${r.subject.summary}  (digest ${r.subject.digest})`;
    case 'input':
      return `question ${r.request_id}: ${r.question}${r.choices ? ` [${r.choices.join(' | ')}]` : ''}`;
    case 'result':
      return `result ${r.request_id} for ${r.tool} under key ${r.resume_key}`;
  }
}

/**
 * The "waiting:" lines: each reason in words, then each command that moves it on (`$ agent-runs
 * ...`, ready to paste); a child's own reasons indented under it. A reason said already (same
 * text and commands, e.g. one child waited for by two requests) is said once, and so is a child's
 * explanation. Empty when nothing waits.
 */
export function formatWaiting(
  reasons: readonly WaitingReason[],
  children: ReadonlyMap<string, readonly WaitingReason[]> = new Map(),
  indent = '  ',
): string[] {
  const lines: string[] = [];
  const said = new Set<string>();
  const explained = new Set<string>();
  for (const reason of reasons) {
    const key = JSON.stringify([reason.text, reason.commands]);
    if (said.has(key)) continue;
    said.add(key);
    const [first = '', ...rest] = continuedLines(reason.text, `${indent}  `);
    lines.push(`${indent}${first}`, ...rest);
    for (const command of reason.commands) lines.push(`${indent}  $ ${printable(command)}`);
    const childId = reason.child_run_id;
    const child = childId === undefined || explained.has(childId) ? undefined : children.get(childId);
    if (childId !== undefined && child !== undefined && child.length > 0) {
      explained.add(childId);
      lines.push(`${indent}  the child run:`);
      lines.push(...formatWaiting(child, new Map(), `${indent}    `));
    }
  }
  return lines;
}

/**
 * How an ended run ended, each word once: `succeeded` (a completed run's outcome), then its
 * terminal reason when it says more than the status and outcome already do (`completed`,
 * `completed:succeeded` say nothing more), e.g. `stopped by the user`, `budget_exceeded`.
 * Empty for a run that has not ended.
 */
export function endedWords(run: PublicRunRecord): string {
  if (run.status !== 'completed' && run.status !== 'failed' && run.status !== 'stopped') return '';
  const outcome = run.status === 'completed' ? run.outcome : undefined;
  const said = [run.status, ...(outcome === undefined ? [] : [outcome, `${run.status}:${outcome}`])];
  const reason = said.includes(run.terminal_reason) ? '' : controlReasonText(run.terminal_reason);
  return [outcome, reason].filter((w) => w !== undefined && w !== '').join(': ') || run.status;
}

/**
 * The `runs get` view of a run at `now` (ms epoch), with why it is not moving (waitingReasons)
 * and the waiting reasons of the children it waits for, by run id; hints start with `cli` and
 * assume the deployment's `timing` (`GET /config`; default the runtime's defaults).
 */
export function formatRun(
  run: PublicRunRecord,
  now: number,
  children: ReadonlyMap<string, readonly WaitingReason[]> = new Map(),
  cli: string = DEFAULT_CLI,
  timing: LeaseTiming = DEFAULT_LEASE_TIMING,
): string {
  const lines = [
    ['run', run.run_id],
    ['status', run.status],
    ['subject', `${run.subject.workspace}:${run.subject.path}`],
    [
      'principal',
      `${run.principal.kind}:${run.principal.id}${run.principal.on_behalf_of ? ` (for ${run.principal.on_behalf_of})` : ''}`,
    ],
    [
      'reducer',
      run.reducer === null
        ? '(client-driven)'
        : `${run.reducer.function_path}${run.reducer.artifact_hash ? ` @${run.reducer.artifact_hash.slice(0, 12)}` : ''}`,
    ],
    ['usage', formatUsage(run)],
    ...(run.usage.cost !== undefined ? [['cost', formatCost(run.usage.cost)]] : []),
    ['events', `${run.last_seq}`],
    ['created', new Date(run.created_at).toISOString()],
  ];
  // A newline in the objective (or the summary below) shows as its next row under an empty key,
  // never as a line of the CLI's own.
  if (run.objective !== undefined)
    for (const [i, line] of run.objective.split(/\r\n|\n|\r/).entries())
      lines.push([i === 0 ? 'objective' : '', line]);
  if (run.operation !== null) {
    const op = run.operation;
    lines.push([
      'operation',
      `${op.kind} ${op.op_id} (${op.started_at === null ? 'pending: asked for, not started yet' : 'in flight: started, its result not in yet'})`,
    ]);
  }
  if (run.status === 'paused') lines.push(['paused', controlReasonText(run.pause_reason)]);
  if (run.status === 'cancelling') lines.push(['stopping', controlReasonText(run.stop_reason)]);
  if (run.status === 'completed' || run.status === 'failed' || run.status === 'stopped') {
    lines.push(['ended', endedWords(run)]);
    if (run.status === 'completed' && run.summary !== undefined)
      for (const [i, line] of run.summary.split(/\r\n|\n|\r/).entries())
        lines.push([i === 0 ? 'summary' : '', line]);
  }
  let text = table(lines.map(([k, v]) => [k ?? '', v ?? '']));
  if (run.open_requests.length > 0) {
    text += `\nopen requests:\n${run.open_requests.map((r) => `  ${requestBlock(r, '    ')}`).join('\n')}`;
  }
  const waiting = formatWaiting(waitingReasons(run, now, timing, cli), children);
  // The section is always there (README.md says so): an ended run, or one moving now, waits for nothing.
  const ended = endedWords(run);
  if (waiting.length > 0) text += `\nwaiting:\n${waiting.join('\n')}`;
  else if (ended !== '')
    text += `\nwaiting: nothing: the run has ended (${printable(ended.startsWith(run.status) ? ended : `${run.status}, ${ended}`)})`;
  else text += '\nwaiting: nothing: the run is moving by itself';
  if (run.queued_steers.length > 0) text += `\nqueued steers: ${run.queued_steers.length}`;
  if (run.projection !== null) {
    const summary = run.projection.summary;
    text += `\nplan${summary ? `: ${continuedLines(summary, '  ').join('\n')}` : ''}`;
    for (const item of run.projection.items)
      text += `\n  [${printable(item.status)}] ${continuedLines(item.title, '    ').join('\n')}`;
  }
  return text;
}

/**
 * `runs get RUN --at SEQ`: the run as it stood at a seq (status, usage, state revision, the last
 * checkpoint, open requests, the state and the plan), saying which parts are not known.
 */
export function formatRunAt(at: RunAtSeq): string {
  const cp = at.checkpoint;
  let text = table([
    ['run', at.run_id],
    ['at seq', `${at.seq} of ${at.current_seq}`],
    ['status', at.status],
    ['usage', formatUsage(at as unknown as PublicRunRecord)],
    ['state rev', `${at.state_rev}${at.state_known ? '' : ' (not stored)'}`],
    ['checkpoint', cp === null ? '(none yet)' : `#${cp.n} ${cp.reason} (state rev ${cp.state_rev})`],
  ]);
  const requests = at.open_requests as unknown as PublicRunRecord['open_requests'];
  if (requests.length > 0)
    text += `\nopen requests:\n${requests.map((r) => `  ${requestBlock(r, '    ')}`).join('\n')}`;
  if (at.state_known) text += `\nstate: ${brief(at.state, 400)}`;
  const projection = at.projection as PublicRunRecord['projection'];
  if (!at.projection_known) text += '\nplan: unknown';
  else if (projection !== null) {
    text += `\nplan${projection.summary ? `: ${printable(projection.summary)}` : ''}`;
    for (const item of projection.items) text += `\n  [${printable(item.status)}] ${printable(item.title)}`;
  }
  if (at.unknown_reason !== undefined) text += `\n(${printable(at.unknown_reason)})`;
  return text;
}

/**
 * The `runs list` table (STATUS with `(waits for its client)` for a client-driven run nobody
 * holds; NEEDS YOU: approvals to decide, questions to answer, results to deliver; the console's
 * words), and the options of its next page when `cursor` is given: a cursor
 * continues only the status it was returned for, so `status` is named beside it.
 */
export function formatRunList(runs: PublicRunRecord[], cursor?: string, status?: string): string {
  const next =
    cursor === undefined ? '' : `${status !== undefined ? `--status ${status} ` : ''}--cursor ${cursor}`;
  if (runs.length === 0) return cursor ? `no runs on this page (next: ${next})` : 'no runs';
  const rows = [
    ['RUN', 'STATUS', 'SUBJECT', 'CREATED', 'NEEDS YOU'],
    ...runs.map((r) => [
      r.run_id,
      statusNoteText(r) !== '' ? `${r.status} (${statusNoteText(r)})` : r.status,
      `${r.subject.workspace}:${r.subject.path}`,
      new Date(r.created_at).toISOString(),
      needsYouText(r.open_requests),
    ]),
  ];
  const note = rows.slice(1).some((r) => r[4] !== '')
    ? '\nNEEDS YOU: what a run waits on someone for; `runs get RUN` prints the command that gives it'
    : '';
  return table(rows) + note + (cursor ? `\nnext page: ${next}` : '');
}

/** How event lines print: digests in full (`events --full-digests`), else their first 12 hex characters. */
export interface EventLineOptions {
  fullDigests?: boolean;
}

/** A sha256 digest (64 hex characters, bare or after `sha256:` / `sha256:rfc8785:`). */
const DIGEST = /\b(?:sha256:(?:rfc8785:)?)?([0-9a-f]{12})[0-9a-f]{52}\b/g;

/** `text` with every digest cut to its first 12 hex characters and `…` (the console's short form). */
export function shortDigests(text: string): string {
  return text.replace(DIGEST, '$1…');
}

/**
 * One event: `#seq  time  kind  detail`, digests short unless `fullDigests`. A newline the text
 * carries starts an indented continuation line (under the detail, so no line of it can pass for
 * an event of its own); every other control character is escaped (printable).
 */
export function formatEvent(event: RunEvent, options: EventLineOptions = {}): string {
  const head = `#${String(event.seq).padStart(4)}  ${clockTime(event.at)}  ${event.kind.padEnd(22)}`;
  const detail = options.fullDigests === true ? eventDetail(event) : shortDigests(eventDetail(event));
  const [first = '', ...rest] = detail.split(/\r\n|\n|\r/);
  const indent = ' '.repeat(head.length + 2);
  return [
    printable(`${head}  ${first}`.trimEnd()),
    ...rest.map((line) => printable(`${indent}${line}`.trimEnd())),
  ].join('\n');
}

function eventDetail(event: RunEvent): string {
  const d = event.data as Record<string, unknown>;
  switch (event.kind) {
    case 'request_opened': {
      const subject = d.subject as { digest?: string; summary?: string } | undefined;
      if (d.kind === 'approval')
        return `approval ${String(d.request_id)} digest ${subject?.digest} ${brief(subject?.summary, 60)}`;
      if (d.kind === 'input') return `question ${String(d.request_id)}: ${brief(d.question, 80)}`;
      return `${String(d.kind)} ${String(d.request_id)}${d.resume_key ? ` resume_key ${String(d.resume_key)}` : ''}`;
    }
    case 'operation_started': {
      const words = eventWords(event);
      return `${event.operation_id ?? ''} ${words !== '' || Object.keys(d).length === 0 ? words : brief(d, 80)}`.trim();
    }
    case 'control_rejected':
      return `${String(d.command ?? '')} rejected: ${String(d.reason ?? '')}`;
    case 'run_started': {
      // The registry versions a run pinned at admission, in words.
      const { pinned, ...rest } = d;
      if (!isPins(pinned)) return Object.keys(d).length === 0 ? '' : brief(d);
      const words = `registry versions pinned: tools ${pinned.catalogue}, policy ${pinned.policy}, agents ${pinned.agents} (its tool calls use these, whatever is published later)`;
      return Object.keys(rest).length === 0 ? words : `${brief(rest)} ${words}`;
    }
    default: {
      // A few words where the kind has them (the details: `events --json`), else the data.
      const words = eventWords(event);
      if (words !== '') return words;
      return Object.keys(d).length === 0 ? '' : brief(d);
    }
  }
}

function isPins(value: unknown): value is { catalogue: number; policy: number; agents: number } {
  const v = value as Record<string, unknown> | null;
  return (
    typeof v === 'object' &&
    v !== null &&
    typeof v.catalogue === 'number' &&
    typeof v.policy === 'number' &&
    typeof v.agents === 'number'
  );
}

export function formatAck(ack: ControlAck): string {
  switch (ack.ack) {
    case 'applied':
      return `applied (seq ${ack.seq})`;
    case 'duplicate':
      return `duplicate (original seq ${ack.original_seq})`;
    case 'rejected':
      return `rejected: ${printable(ack.reason)} (seq ${ack.seq})`;
  }
}

/**
 * The `agent-runs tools` table. TOOL APPROVAL is the tool's own declaration; POLICY what the
 * published policy of `policy` does with a call (tool-policy.ts policyEffect), `?` when the
 * policy could not be read (a string: the error's code); FROM, when the tools registry `catalogue`
 * could be read, says whether a tool was published there or is built in (registered in code).
 * Notes under the table say what the columns mean.
 */
export function formatTools(
  tools: ToolDescriptor[],
  policy?: RegistryListing | string,
  catalogue?: RegistryListing | string,
): string {
  if (tools.length === 0) return 'no tools registered';
  const published = typeof policy === 'object' ? policy.entries.find((e) => e.name === 'default') : undefined;
  const policyOf = (t: ToolDescriptor): string =>
    typeof policy !== 'object'
      ? '?'
      : published === undefined
        ? 'in-code rules'
        : policyEffect(t, published.body as unknown as PolicyView);
  const inRegistry =
    typeof catalogue === 'object' ? new Set(catalogue.entries.map((e) => e.name)) : undefined;
  const from = (t: ToolDescriptor) =>
    inRegistry === undefined ? [] : [inRegistry.has(t.name) ? 'registry' : 'built in'];
  const notes = [
    'TOOL APPROVAL: what the tool itself declares. POLICY: what the published policy does with a call of it. A call needs approval when either asks for it.',
  ];
  if (typeof policy === 'string')
    notes.push(
      `POLICY ?: the policy could not be read (${policy}; reading it needs an admin token): it may still deny a call or require approval for it.`,
    );
  else if (published === undefined)
    notes.push(
      'no policy is published (policy registry version 0): the rules the deployment was configured with in code apply; they are not shown here (`npm start` configures none: every call is allowed unless TOOL APPROVAL asks).',
    );
  else
    notes.push(
      `the policy is "default" version ${published.version} (policy registry version ${policy?.registry_version}); see it with: agent-runs registry get policy default`,
    );
  if (inRegistry !== undefined)
    notes.push(
      'FROM: "built in" tools are registered in code (the local stack\'s sample tools), not in the tools registry; "registry" tools were published with `agent-runs registry publish tools`.',
    );
  return `${table([
    [
      'NAME',
      'VERSION',
      ...(inRegistry === undefined ? [] : ['FROM']),
      'RISK',
      'MUTATING',
      'TOOL APPROVAL',
      'POLICY',
      'DESCRIPTION',
    ],
    ...tools.map((t) => [
      t.name,
      t.version,
      ...from(t),
      t.metadata.risk,
      t.metadata.mutating ? 'yes' : 'no',
      t.metadata.approval,
      policyOf(t),
      t.description ?? '',
    ]),
  ])}\n${notes.map(printable).join('\n')}`;
}

export function formatCheckpoints(checkpoints: Checkpoint[]): string {
  if (checkpoints.length === 0) return 'no checkpoints';
  return table([
    ['CHECKPOINT', 'REASON', 'STATE REVISION', 'UP TO EVENT', 'WRITTEN AT'],
    ...checkpoints.map((c) => [
      String(c.n),
      c.reason,
      String(c.state_rev),
      String(c.transcript_cutoff_seq),
      new Date(c.at).toISOString(),
    ]),
  ]);
}

export function formatArtifact(a: FunctionArtifact): string {
  return printable(`${a.function_path}  ${a.kind}  ${a.size} bytes  sha256 ${a.hash}`);
}
