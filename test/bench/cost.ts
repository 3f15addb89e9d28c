/**
 * What a deployment costs: the AWS requests and Lambda time of one run of the schedule, from what the bench
 * measured (each scope's duration as its summary reports it, the events the bus received and their size),
 * priced at list prices. Printed with its formula, so a user can put in their own estate.
 */

/** List prices, us-east-1, on-demand, without free tiers (USD). */
export const PRICES = {
  /** Lambda on arm64 (the stack's functions), per GB-second and per request. */
  lambdaGbSecond: 0.0000133334,
  lambdaRequest: 0.2 / 1e6,
  /** SQS standard queue, per request (64 KB chunk). */
  sqsRequest: 0.4 / 1e6,
  /** EventBridge custom events (per 64 KB chunk of an entry), and EventBridge Scheduler invocations. */
  eventBridgeEvent: 1 / 1e6,
  schedulerInvocation: 1 / 1e6,
  /** DynamoDB on-demand: per write request unit (1 KB) and read request unit (4 KB, strongly consistent; half for eventually consistent). */
  dynamoWrite: 0.625 / 1e6,
  dynamoRead: 0.125 / 1e6,
} as const;

/** The stack's memory settings (infra/Cpsync.ts), in GB. */
const WORKER_GB = 1;
const ENUMERATOR_GB = 0.5;

export interface RunMeasure {
  /** Scope durations as the scope summaries report them (ms); each is one scope worker invocation. */
  scopeDurations: readonly number[];
  /** Change events published (created, updated, deleted). */
  changeEvents: number;
  /** Mean size of a change event's detail, in bytes. */
  changeEventBytes: number;
}

export interface RunCost {
  scopes: number;
  gbSeconds: number;
  lambdaRequests: number;
  sqsRequests: number;
  events: number;
  dynamoWrites: number;
  dynamoReads: number;
  dollars: number;
}

/** Seconds the enumerator is allowed (its timeout is 2 minutes); it lists scopes and sends them, a few seconds at most. */
const ENUMERATOR_SECONDS = 5;

/**
 * One run of the schedule over `scopes` scopes:
 * - Lambda: GB-s = Σ scope durations × 1 GB (the worker) + 5 s × 0.5 GB (the enumerator); requests = 1 + S;
 * - SQS: ⌈S/10⌉ SendMessageBatch + S receives + S deletes (batch size 1);
 * - EventBridge: C change events + S scope summaries, one Scheduler invocation;
 * - DynamoDB: per scope 2 writes (idempotency record written, then completed) and 3 scans of the (nearly
 *   empty) outbox table, 0.5 read unit each; per change event its write-ahead intent and the event itself
 *   put (⌈bytes/1 KB⌉ write units each) and both deleted (1 unit each).
 */
export function runCost(measure: RunMeasure): RunCost {
  const scopes = measure.scopeDurations.length;
  const workerSeconds =
    measure.scopeDurations.reduce((sum, ms) => sum + Math.max(1, Math.ceil(ms)), 0) / 1000;
  const gbSeconds = workerSeconds * WORKER_GB + ENUMERATOR_SECONDS * ENUMERATOR_GB;
  const lambdaRequests = 1 + scopes;
  const sqsRequests = Math.ceil(scopes / 10) + 2 * scopes;
  const events = measure.changeEvents + scopes;
  const unitsPerPut = Math.max(1, Math.ceil(measure.changeEventBytes / 1024));
  const dynamoWrites = 2 * scopes + measure.changeEvents * (2 * unitsPerPut + 2);
  const dynamoReads = scopes * 3 * 0.5;
  const dollars =
    gbSeconds * PRICES.lambdaGbSecond +
    lambdaRequests * PRICES.lambdaRequest +
    sqsRequests * PRICES.sqsRequest +
    events * PRICES.eventBridgeEvent +
    PRICES.schedulerInvocation +
    dynamoWrites * PRICES.dynamoWrite +
    dynamoReads * PRICES.dynamoRead;
  return { scopes, gbSeconds, lambdaRequests, sqsRequests, events, dynamoWrites, dynamoReads, dollars };
}

/** Lambda's SQS pollers long-poll an idle queue: about five pollers, each a 20-second receive, all day. */
const IDLE_POLLS_PER_DAY = 5 * 3 * 60 * 24;

export function reportCost(
  say: (line?: string) => void,
  estate: { clusters: number; scopesByProvider: string },
  full: RunMeasure,
  steady: RunMeasure,
  runsPerDay: number,
): void {
  const first = runCost(full);
  const quiet = runCost(steady);
  const dollars = (value: number) => `$${value < 0.01 ? value.toFixed(4) : value.toFixed(2)}`;
  const idle = IDLE_POLLS_PER_DAY * PRICES.sqsRequest;
  const day = runsPerDay * quiet.dollars + idle;
  const units = Math.max(1, Math.ceil(full.changeEventBytes / 1024));
  const perChange = PRICES.eventBridgeEvent + (2 * units + 2) * PRICES.dynamoWrite;
  say('## What a deployment costs');
  say('');
  say(
    `From the runs above (file hub, the configuration's defaults): each scope's duration as its \`Inventory Scope Synced\` summary reports it stands for one scope worker invocation (the stack's worker takes one SQS message per invocation, 1 GB), and the events the EventBridge server received. Prices: us-east-1 list prices, Lambda on arm64, without free tiers.`,
  );
  say('');
  say(
    `| ${estate.clusters.toLocaleString('en')} clusters (${estate.scopesByProvider}) | full sync (every profile created) | steady-state run (nothing changed) |`,
  );
  say('| --- | --- | --- |');
  const row = (label: string, cell: (cost: RunCost) => string) =>
    say(`| ${label} | ${cell(first)} | ${cell(quiet)} |`);
  row('scope worker invocations (+ 1 enumerator)', (c) => `${c.scopes}`);
  row('Lambda GB-seconds', (c) => c.gbSeconds.toFixed(1));
  row('Lambda requests', (c) => `${c.lambdaRequests}`);
  row('SQS requests', (c) => `${c.sqsRequests}`);
  row('EventBridge events (+ 1 Scheduler invocation)', (c) => `${c.events}`);
  row('DynamoDB write / read request units', (c) => `${c.dynamoWrites} / ${c.dynamoReads}`);
  row('**dollars per run**', (c) => `**${dollars(c.dollars)}**`);
  say('');
  say(
    `A day at the default schedule (${runsPerDay} runs, every ${Math.round(1440 / runsPerDay)} minutes) with nothing changing: ${runsPerDay} × ${dollars(quiet.dollars)} + ${dollars(idle)} for the SQS pollers' idle long polls (${IDLE_POLLS_PER_DAY.toLocaleString('en')} receives) = **${dollars(day)} a day** (about ${dollars(day * 30)} a month). Each change on top (one event and its intent, ${units} KB each) adds $${(perChange * 1e6).toFixed(2)} a million; the first sync of the estate is the full-sync column.`,
  );
  say('');
  say(
    'For your own estate, with S scopes (EKS account × region, GKE project, AKS subscription), C changes per run, e the mean event size in KB, and d̄ the mean scope duration in seconds (here ' +
      `${(quiet.gbSeconds / Math.max(1, quiet.scopes)).toFixed(2)} s steady, ${(first.gbSeconds / Math.max(1, first.scopes)).toFixed(2)} s creating every profile):`,
  );
  say('');
  say('```');
  say(
    'per run  = (S·d̄·1 GB + 2.5 GB-s) · $0.0000133334     Lambda time (worker 1 GB, enumerator ≤ 5 s at 0.5 GB)',
  );
  say('         + (1 + S) · $0.20/M                        Lambda requests');
  say('         + (⌈S/10⌉ + 2S) · $0.40/M                   SQS: send, receive, delete');
  say('         + (C + S + 1) · $1.00/M                    EventBridge events, one Scheduler invocation');
  say(
    '         + (2S + C·(2⌈e⌉ + 2)) · $0.625/M            DynamoDB writes: idempotency, outbox and intents',
  );
  say('         + 1.5S · $0.125/M                          DynamoDB reads: outbox scans');
  say(
    `per day  = runs/day · per run + ${IDLE_POLLS_PER_DAY.toLocaleString('en')} · $0.40/M   (96 runs a day at the default 15 minutes)`,
  );
  say('```');
  say('');
}
