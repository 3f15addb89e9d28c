/**
 * The `cpsync` command line (commander): every command, its options and help, and how each is run and
 * printed. One file because it is one program: the generated CLI reference (docs/reference/cli.md) and the docs'
 * command checks read `cpsyncProgram` whole; what a command does lives in adapters/ and core/.
 */
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { compose, type Composition } from '../adapters/compose/compose.ts';
import { inventoryOptionsOf, type CpsyncConfig } from '../adapters/compose/config.ts';
import {
  inventoryProfiles,
  keepUndelivered,
  orphanReport,
  runSync,
  type OrphanReport,
  type SyncReport,
} from '../core/sync/engine.ts';
import { CpsyncError, firstLineOf, messageOf } from '../core/domain/errors.ts';
import { findOrphans, scopeCoversProfile } from '../core/domain/orphans.ts';
import { inventoryNamespaces } from '../core/domain/options.ts';
import { canonicalScope, InvalidScopeError } from '../core/domain/scopes.ts';
import { sameProviderId } from '../core/domain/naming.ts';
import { announceInventory } from '../core/sync/announce.ts';
import { readHubGuard } from '../adapters/hub/hubPolicy.ts';
import { LABEL_PROVIDER } from '../core/domain/constants.ts';
import type { ClusterRef, ClusterSource } from '../core/sync/ports.ts';
import { clusterKey } from '../core/sync/clusterKeys.ts';
import { followClusters } from '../core/sync/follow.ts';
import { lookScheduleOf } from '../core/domain/lookSchedule.ts';
import { PROVIDERS, type Provider } from '../core/domain/model/observedCluster.ts';
import { scopeKey, type Scope } from '../core/domain/model/scope.ts';
import type { MalformedObject } from '../core/sync/ports.ts';
import { formatPlan, formatSummary, formatTable, formatYaml, listRow, planLines } from './format.ts';
import { printable, printableJson, printableLines } from './terminal.ts';
import { argoCdNamespaceOf, doctor, type DoctorReport } from '../adapters/compose/doctor.ts';
import { DEFAULTS_SOURCE, loadConfig } from './loadConfig.ts';
import { formatInventorySummary, reportHtml, summarize } from './inventoryReport.ts';
import { ambientConfig, ambientDiscovery, writeStarterConfig } from './ambientConfig.ts';
import { credentialsOptions, printCredential } from './credentials.ts';
import { addConsumersCommand } from './consumersCommand.ts';
import { addHubCommand } from './hubCommand.ts';
import { ALL_PROVIDERS } from '../adapters/compose/providers/index.ts';
import packageJson from '../package.json' with { type: 'json' };

/**
 * Exit codes: 0 every scope complete and every change published, 1 something incomplete (a scope
 * failed or was partial, a write was refused, events wait in the outbox), 2 bad usage or
 * configuration, 130/143 stopped by SIGINT/SIGTERM.
 */
const ExitCode = { Ok: 0, Incomplete: 1, Usage: 2 } as const;
/** The exit code of a run stopped by a signal (128 + its number, as shells report it). */
export const SIGNAL_EXIT: Readonly<Record<string, number>> = { SIGINT: 130, SIGTERM: 143 };

export interface Io {
  stdout: NodeJS.WritableStream & { isTTY?: boolean };
  stderr: NodeJS.WritableStream & { isTTY?: boolean };
  /** Aborted (with the signal's name as its reason) when the run is to stop. */
  signal?: AbortSignal;
}

/** A `--scope` as given; made canonical and checked against the configuration later. */
function parseScope(value: string, previous: Scope[] = []): Scope[] {
  const [provider, account, region = '*', ...rest] = value.split('/');
  if (!provider || !account || rest.length > 0 || !PROVIDERS.includes(provider as Provider)) {
    throw new InvalidArgumentError(
      `expected <provider>/<account>[/<region>] with provider one of ${PROVIDERS.join(', ')}, got ${JSON.stringify(value)}`,
    );
  }
  return [...previous, { provider: provider as Provider, account, region }];
}

function parseProvider(value: string, previous: Provider[] = []): Provider[] {
  if (!PROVIDERS.includes(value as Provider))
    throw new InvalidArgumentError(`expected one of ${PROVIDERS.join(', ')}, got ${JSON.stringify(value)}`);
  return [...previous, value as Provider];
}

/** Whether a run left nothing for a person to look at. */
function clean(report: SyncReport): boolean {
  return (
    report.scopes.every((s) => s.outcome.kind === 'complete' && s.summary.counts.failed === 0) &&
    report.events.failed.length === 0 &&
    report.problems.length === 0 &&
    report.malformed.length === 0 &&
    report.quarantined.length === 0
  );
}

async function syncCommand(
  config: CpsyncConfig,
  options: {
    provider?: Provider[];
    scope?: Scope[];
    dryRun?: boolean;
    follow?: boolean;
    fresh?: boolean;
    output: string;
  },
  io: Io,
): Promise<number> {
  const composition = await compose(config, ALL_PROVIDERS, {
    stdout: io.stdout,
    ...(options.fresh ? { fresh: true } : {}),
  });
  try {
    const resolved = await composition.resolveScopes({
      ...(options.provider ? { providers: options.provider } : {}),
      ...(options.scope ? { scopes: options.scope } : {}),
    });
    if (options.scope && resolved.refused.length > 0) {
      for (const refusal of resolved.refused)
        io.stderr.write(`cpsync: --scope ${printable(refusal.requested)}: ${printable(refusal.reason)}\n`);
      return ExitCode.Usage;
    }
    for (const failure of resolved.failures)
      io.stderr.write(
        `cpsync: cannot enumerate the ${failure.provider} scopes: ${printable(failure.message)}\n`,
      );
    const progress = io.stderr.isTTY === true && !options.dryRun;
    const full = !options.provider && !options.scope;
    const determined = PROVIDERS.filter((p) => !resolved.failures.some((f) => f.provider === p));
    const report = await runSync(composition.ports, {
      syncId: randomUUID(),
      scopes: resolved.scopes,
      ...composition.settings,
      // A full sync looks for orphans: profiles of scopes the configuration no longer covers.
      ...(full ? { orphans: { configured: resolved.scopes, determined } } : {}),
      ...(options.dryRun ? { dryRun: true } : { retainDetails: false }),
      ...(io.signal ? { signal: io.signal } : {}),
      ...(progress
        ? {
            onScope: (s, done, total) =>
              io.stderr.write(`\r\x1b[K[${done}/${total}] ${printable(scopeKey(s.scope))} ${s.outcome.kind}`),
          }
        : {}),
    });
    if (progress) io.stderr.write('\r\x1b[K');
    if (options.dryRun) {
      io.stdout.write(
        options.output === 'json'
          ? `${printableJson(report.scopes.flatMap(planLines), 2)}\n`
          : formatPlan(report),
      );
    }
    io.stderr.write(`${formatSummary(report)}\n`);
    if (report.interrupted) return SIGNAL_EXIT[report.interrupted.reason] ?? ExitCode.Incomplete;
    let followed = true;
    if (options.follow && !options.dryRun && report.settling.length > 0) {
      const outcome = await follow(config, composition, report, io);
      if (outcome.interrupted && io.signal?.aborted)
        return SIGNAL_EXIT[String(io.signal.reason)] ?? ExitCode.Incomplete;
      followed = outcome.clean;
    }
    // Providers set to `off`: their profiles go now, each announced.
    const off = (report.orphans ?? []).filter((o) => config.providers.off.includes(o.scope.provider));
    let pruned = true;
    if (off.length > 0 && !options.dryRun) {
      io.stderr.write(`cpsync: deleting the profiles of ${config.providers.off.join(', ')} (set to off)\n`);
      pruned = (await prune(composition, off, io)) === ExitCode.Ok;
    }
    return clean(report) && pruned && followed && resolved.failures.length === 0
      ? ExitCode.Ok
      : ExitCode.Incomplete;
  } finally {
    await composition.close();
  }
}

/**
 * `sync --follow`: the clusters the run found in change, looked at again until they settle (or the
 * configured bound is reached, or the run is stopped: a look under way finishes, no wait is begun).
 */
async function follow(
  config: CpsyncConfig,
  composition: Awaited<ReturnType<typeof compose>>,
  report: SyncReport,
  io: Io,
): Promise<{ clean: boolean; interrupted: boolean }> {
  const key = (ref: ClusterRef) => printable(clusterKey(ref));
  io.stderr.write(
    `following ${report.settling.length} cluster(s) the clouds are still changing: ${report.settling.map((c) => `${key(c.ref)} (${printable(c.state)})`).join(', ')}\n`,
  );
  const followed = await followClusters(composition.ports, {
    ...composition.settings,
    syncId: report.syncId,
    clusters: report.settling,
    schedule: lookScheduleOf(config.follow),
    maxMillis: config.follow.maxMinutes * 60_000,
    ...(io.signal ? { signal: io.signal } : {}),
    onLook: (look) =>
      io.stderr.write(
        `  ${key(look.ref)}: ${look.error ? `look failed (tried again later): ${printable(look.error)}` : look.state ? `still ${printable(look.state)}` : `settled${look.result && look.result !== 'unchanged' ? ` (${look.result})` : ''}`} after ${(look.afterMillis / 1000).toFixed(0)} s\n`,
      ),
  });
  const undelivered = await keepUndelivered(composition.ports).catch((error: unknown) => [
    { eventId: '', code: 'Error', message: messageOf(error), retryable: true },
  ]);
  const left = followed.unsettled.map((c) => `${key(c.ref)} (${printable(c.state)})`);
  io.stderr.write(
    `followed: ${followed.settled.length} settled in ${followed.looks} look(s)${left.length > 0 ? `; still in change, left to the next sync: ${left.join(', ')}` : ''}${followed.events.pending + undelivered.length > 0 ? `; ${followed.events.pending + undelivered.length} event(s) wait in the outbox for the next run` : ''}\n`,
  );
  for (const problem of followed.problems) io.stderr.write(`  ${printable(problem)}\n`);
  return {
    clean: followed.problems.length === 0 && followed.events.pending === 0 && undelivered.length === 0,
    interrupted: followed.interrupted,
  };
}

/** A source for the scopes of orphans: it lists nothing and is never complete, so only the named profiles go. */
const NO_CLUSTERS: ClusterSource = {
  listScope: async (scope) => ({ outcome: { scope, kind: 'partial', missing: [] }, clusters: [] }),
  getCluster: async () => undefined,
  isProviderIdOf: () => false,
};

/** Deletes the profiles of `orphans` through the engine (intents, events, leases, as any sync). */
async function prune(composition: Composition, orphans: readonly OrphanReport[], io: Io): Promise<number> {
  const report = await runSync(
    { ...composition.ports, sources: { eks: NO_CLUSTERS, gke: NO_CLUSTERS, aks: NO_CLUSTERS } },
    {
      syncId: randomUUID(),
      scopes: orphans.map((o) => o.scope),
      ...composition.settings,
      // Not confirmed gone (nothing asked the cloud): what cpsync granted on them stays in its ledger.
      pruned: new Set(orphans.flatMap((o) => o.providerIds)),
      retainDetails: false,
      ...(io.signal ? { signal: io.signal } : {}),
    },
  );
  io.stderr.write(`${formatSummary(report)}\n`);
  if (report.interrupted) return SIGNAL_EXIT[report.interrupted.reason] ?? ExitCode.Incomplete;
  await sayHeldGrants(composition, orphans, io);
  const failed = report.scopes.some((s) => s.summary.counts.failed > 0 || s.outcome.kind === 'failed');
  return failed || report.events.failed.length > 0 || report.problems.length > 0
    ? ExitCode.Incomplete
    : ExitCode.Ok;
}

/**
 * What cpsync's ledger still holds on the clusters of pruned profiles: grants nothing takes back while no configured
 * scope covers those clusters (pruning asks no cloud), said so that they are not forgotten.
 */
async function sayHeldGrants(
  composition: Composition,
  orphans: readonly OrphanReport[],
  io: Io,
): Promise<void> {
  const { ledger } = composition.ports;
  if (!ledger) return;
  const held: string[] = [];
  const accounts = new Map(orphans.map((o) => [`${o.scope.provider}/${o.scope.account}`, o.scope]));
  try {
    for (const scope of accounts.values()) {
      const ids = orphans.filter((o) => o.scope.provider === scope.provider).flatMap((o) => o.providerIds);
      for (const record of await ledger.read(scope))
        if (
          record.grants.length > 0 &&
          ids.some((id) => sameProviderId(record.provider, id, record.providerId))
        )
          held.push(
            `${record.providerId} (${record.grants.map((g) => `${g.consumer}: ${g.identity}`).join(', ')})`,
          );
    }
  } catch (error) {
    io.stderr.write(
      `cpsync: cannot read cpsync's ledger for what it granted on the pruned clusters: ${printable(messageOf(error))}\n`,
    );
    return;
  }
  if (held.length > 0)
    io.stderr.write(
      `cpsync: still held, as cpsync's ledger keeps them: what it granted on ${held.length} cluster(s) no configured scope covers — ${printable(held.join('; '))}. Consumers keep that access: configure the scope again for cpsync to take back what the configuration no longer wants, or take it back by hand (docs/configuring.md#orphans-scopes-dropped-from-the-configuration)\n`,
    );
}

/** The orphans of the inventory, or undefined (said on stderr) when the configured scopes cannot all be told. */
async function findInventoryOrphans(composition: Composition, io: Io) {
  const resolved = await composition.resolveScopes({});
  for (const failure of resolved.failures)
    io.stderr.write(
      `cpsync: cannot tell the orphans of ${failure.provider} (its scopes cannot be enumerated): ${printable(failure.message)}\n`,
    );
  const determined = new Set(PROVIDERS.filter((p) => !resolved.failures.some((f) => f.provider === p)));
  const { profiles, malformed } = await readInventory(composition);
  return {
    orphans: findOrphans(profiles, resolved.scopes, determined),
    malformed,
    failures: resolved.failures,
  };
}

async function orphansCommand(
  config: CpsyncConfig,
  options: { output: string; yes?: boolean; prune: boolean },
  io: Io,
): Promise<number> {
  const composition = await compose(config, ALL_PROVIDERS);
  try {
    const { orphans, malformed, failures } = await findInventoryOrphans(composition, io);
    const rows = orphans.flatMap((o) => o.profiles.map((p) => ({ scope: scopeKey(o.scope), ...listRow(p) })));
    if (!options.prune) {
      if (options.output === 'json') io.stdout.write(`${printableJson(rows, 2)}\n`);
      else if (options.output === 'yaml') io.stdout.write(formatYaml(rows));
      else
        io.stdout.write(
          formatTable(rows, [
            ['name', 'NAME'],
            ['namespace', 'NAMESPACE'],
            ['scope', 'SCOPE (NO LONGER CONFIGURED)'],
            ['displayName', 'CLUSTER'],
          ]),
        );
      const code = reportMalformed(malformed, io);
      return failures.length > 0 ? ExitCode.Incomplete : code;
    }
    const count = rows.length;
    if (count === 0) {
      io.stderr.write('cpsync: no orphans: every profile is of a configured scope\n');
      return failures.length > 0 ? ExitCode.Incomplete : ExitCode.Ok;
    }
    const listed = printable(orphans.map((o) => `${scopeKey(o.scope)} (${o.profiles.length})`).join(', '));
    if (!options.yes) {
      for (const row of rows)
        io.stdout.write(`would delete ${printable(`${row.namespace}/${row.name} (${row.scope})`)}\n`);
      io.stderr.write(
        `cpsync: dry run: ${count} orphan profile(s) of ${listed}; nothing deleted — run again with --yes to delete them\n`,
      );
      return ExitCode.Ok;
    }
    io.stderr.write(`cpsync: deleting ${count} orphan profile(s) of ${listed}\n`);
    return await prune(composition, orphans.map(orphanReport), io);
  } finally {
    await composition.close();
  }
}

/** The manager's well-formed profiles in every inventory namespace, and the objects that are not. */
async function readInventory(from: CpsyncConfig | Composition) {
  const composition = 'ports' in from ? from : await compose(from, []);
  return inventoryProfiles(composition.ports.hub, composition.settings.options);
}

function reportMalformed(malformed: MalformedObject[], io: Io): number {
  for (const object of malformed)
    io.stderr.write(
      `cpsync: malformed object in the hub, not listed: ${printable(`${object.namespace}/${object.name} (${object.reason})`)}\n`,
    );
  return malformed.length > 0 ? ExitCode.Incomplete : ExitCode.Ok;
}

async function listCommand(
  config: CpsyncConfig,
  options: { output: string; summary?: boolean; orphans?: boolean },
  io: Io,
): Promise<number> {
  if (options.orphans) return orphansCommand(config, { output: options.output, prune: false }, io);
  const { profiles, malformed } = await readInventory(config);
  const output = options.output;
  if (options.summary) {
    io.stdout.write(formatInventorySummary(summarize(profiles)));
    return reportMalformed(malformed, io);
  }
  const rows = profiles.map(listRow).sort((a, b) => a.name.localeCompare(b.name));
  if (output === 'json') io.stdout.write(`${printableJson(rows, 2)}\n`);
  else if (output === 'yaml') io.stdout.write(formatYaml(rows));
  else {
    io.stdout.write(
      formatTable(rows, [
        ['name', 'NAME'],
        ['provider', 'PROVIDER'],
        ['location', 'LOCATION'],
        ['version', 'VERSION'],
        ['healthy', 'HEALTHY'],
        ['nodes', 'NODES'],
      ]),
    );
  }
  return reportMalformed(malformed, io);
}

async function announceCommand(
  config: CpsyncConfig,
  options: {
    all?: boolean;
    provider?: Provider[];
    scope?: Scope[];
    namespace?: string[];
    unguardedHub?: 'refuse' | 'trust';
  },
  io: Io,
): Promise<number> {
  if (!options.all && !options.provider && !options.scope && !options.namespace) {
    io.stderr.write(
      'cpsync: say what to announce: --all, or --provider, --scope or --namespace to announce part of the inventory\n',
    );
    return ExitCode.Usage;
  }
  // As `sync --scope` takes them: in the clouds' spelling, or refused naming what is wrong (a scope of another shape
  // would select nothing, and the command would say it announced nothing as if that were the inventory).
  let scopes: Scope[] | undefined;
  try {
    scopes = options.scope?.map((scope) => canonicalScope(scope));
  } catch (error) {
    if (!(error instanceof InvalidScopeError)) throw error;
    io.stderr.write(`cpsync: --scope: ${printable(error.message)}\n`);
    return ExitCode.Usage;
  }
  const written = inventoryNamespaces(inventoryOptionsOf(config)).map((n) => n.name);
  const unknown = (options.namespace ?? []).filter((namespace) => !written.includes(namespace));
  if (unknown.length > 0) {
    io.stderr.write(
      `cpsync: --namespace: ${printable(unknown.join(', '))} is not a namespace cpsync writes profiles to (${written.join(', ')})\n`,
    );
    return ExitCode.Usage;
  }
  const composition = await compose(config, [], { stdout: io.stdout });
  try {
    const announceId = randomUUID();
    // On a Kubernetes hub, what others could have written is not announced as cpsync's (a file hub is cpsync's alone).
    const guard =
      composition.hubKubeConfig && options.unguardedHub !== 'trust'
        ? await readHubGuard(await composition.hubKubeConfig(), composition.settings.options.manager)
        : undefined;
    const report = await announceInventory(composition.ports, {
      ...(guard ? { unguarded: (namespace: string) => guard.unguarded(namespace) } : {}),
      announceId,
      occurredAt: new Date().toISOString(),
      eventSource: composition.settings.eventSource,
      options: composition.settings.options,
      select: (profile) =>
        (!options.provider ||
          options.provider.includes(profile.metadata.labels?.[LABEL_PROVIDER] as Provider)) &&
        (!options.namespace || options.namespace.includes(profile.metadata.namespace)) &&
        (!scopes || scopes.some((scope) => scopeCoversProfile(scope, profile))),
      ...(io.signal ? { signal: io.signal } : {}),
    });
    for (const failure of report.failed)
      io.stderr.write(
        `cpsync: event ${printable(`${failure.eventId} not published: ${failure.code}: ${failure.message}`)}\n`,
      );
    const code = reportMalformed(report.malformed, io);
    const withheld = new Map<string, string[]>();
    for (const { namespace, name, reason } of report.withheld)
      withheld.set(reason, [...(withheld.get(reason) ?? []), `${namespace}/${name}`]);
    for (const [reason, names] of withheld)
      io.stderr.write(
        `cpsync: not announced, as cpsync cannot tell it wrote them: ${printable(names.join(', '))}: ${printable(reason)}\n`,
      );
    io.stderr.write(
      `cpsync: announced ${report.published} of ${report.profiles} profile(s) as ClusterProfile Announced events (announcement ${announceId})${report.withheld.length > 0 ? `; ${report.withheld.length} withheld` : ''}\n`,
    );
    if (report.interrupted) return SIGNAL_EXIT[report.interrupted] ?? ExitCode.Incomplete;
    return report.failed.length > 0 || report.published < report.profiles || report.withheld.length > 0
      ? ExitCode.Incomplete
      : code;
  } finally {
    await composition.close();
  }
}

async function reportCommand(config: CpsyncConfig, source: string, file: string, io: Io): Promise<number> {
  const { profiles, malformed } = await readInventory(config);
  const summary = summarize(profiles);
  writeFileSync(file, reportHtml(summary, { generatedAt: new Date().toISOString(), source }));
  io.stderr.write(
    `cpsync: wrote ${printable(file)}: ${summary.total} cluster(s), ${summary.attention.length} need a look\n`,
  );
  return reportMalformed(malformed, io);
}

/**
 * `cpsync doctor`: the checks (adapters/compose/doctor.ts) run here with this machine's configuration and
 * credentials, or in the deployed scope worker (`--function`, invoked with `{"doctor": true}`, and Argo CD's
 * namespace when this configuration's Argo CD subscriber writes on the hub) with its role.
 */
async function doctorCommand(
  configFile: string | undefined,
  options: { function?: string; output: string },
  io: Io,
): Promise<number> {
  let report: DoctorReport;
  if (options.function) {
    // The deployed functions are not told of the subscribers: Argo CD's namespace on the hub, from this configuration.
    const argocdNamespace = argoCdNamespaceOf(loadConfig(configFile).config);
    const { InvokeCommand, LambdaClient } = await import('@aws-sdk/client-lambda');
    const answer = await new LambdaClient({}).send(
      new InvokeCommand({
        FunctionName: options.function,
        Payload: JSON.stringify({ doctor: true, ...(argocdNamespace ? { argocdNamespace } : {}) }),
      }),
    );
    const payload = new TextDecoder().decode(answer.Payload ?? new Uint8Array());
    if (answer.FunctionError) {
      io.stderr.write(
        `cpsync: ${printable(options.function)} failed to run the checks: ${printable(payload)}\n`,
      );
      return ExitCode.Incomplete;
    }
    report = JSON.parse(payload) as DoctorReport;
  } else {
    const composition = await compose(loadConfig(configFile).config, ALL_PROVIDERS, { stdout: io.stderr });
    try {
      report = await doctor(composition);
    } finally {
      await composition.close();
    }
  }
  if (options.output === 'json') io.stdout.write(`${printableJson(report, 2)}\n`);
  else {
    for (const check of report.checks)
      io.stdout.write(`${check.ok ? '✔' : '✖'} ${printable(check.subject)}: ${printable(check.detail)}\n`);
    const failed = report.checks.filter((check) => !check.ok).length;
    io.stdout.write(
      failed === 0
        ? `cpsync doctor: all ${report.checks.length} checks passed${options.function ? ` in ${printable(options.function)}` : ''}\n`
        : `cpsync doctor: ${failed} of ${report.checks.length} checks failed\n`,
    );
  }
  return report.ok ? ExitCode.Ok : ExitCode.Incomplete;
}

/**
 * The `cpsync` command line as commander builds it; each command's action hands its exit code to `finish`.
 * Parsed by `main`, and by the docs' tests (every `cpsync …` line the docs show must parse).
 */
export function cpsyncProgram(io: Io, finish: (exitCode: number) => void): Command {
  const program = new Command('cpsync')
    .description("Keep a hub cluster's ClusterProfile inventory in step with your EKS, GKE and AKS clusters.")
    .option('-c, --config <file>', 'configuration file (YAML)', undefined)
    .version(packageJson.version, '-V, --version', 'print the version of cpsync')
    .exitOverride()
    .configureOutput({
      writeOut: (s) => io.stdout.write(s),
      writeErr: (s) => io.stderr.write(printableLines(s)),
    })
    .showHelpAfterError();

  program
    .command('sync')
    .description('sync every configured scope (or some) into the hub and publish the changes')
    .option('-p, --provider <provider>', 'only this provider (eks, gke, aks); repeatable', parseProvider)
    .option('-s, --scope <provider/account[/region]>', 'only this scope; repeatable', parseScope)
    .option('--dry-run', 'print the plan as a diff; write nothing to the hub or the bus')
    .option(
      '--follow',
      'then look again at every cluster the clouds are still changing (creating, updating, deleting…) until it settles (follow: in the configuration)',
    )
    .option(
      '--fresh',
      'ask the clouds for every answer this run, none taken from what earlier runs remembered (EKS DescribeCluster answers and node groups, AKS CAs)',
    )
    .addOption(
      new Option('-o, --output <format>', 'plan format with --dry-run')
        .choices(['text', 'json'])
        .default('text'),
    )
    .action(async (options) => {
      const loaded = loadConfig(program.opts().config);
      // No configuration file: the clouds the default credentials reach, said on stderr; none is exit 2.
      const config =
        loaded.source === DEFAULTS_SOURCE
          ? ambientConfig(
              await ambientDiscovery((text) => io.stderr.write(`cpsync: ${printableLines(text)}\n`)),
            )
          : loaded.config;
      finish(await syncCommand(config, options, io));
    });

  program
    .command('init')
    .description(
      'write a starter configuration (--config, default cpsync.yaml) for the clouds your default credentials reach',
    )
    .action(async () => {
      await writeStarterConfig(program.opts().config ?? 'cpsync.yaml', (text) =>
        io.stderr.write(`cpsync: ${printableLines(text)}\n`),
      );
    });

  program
    .command('list')
    .description("list the hub's profiles")
    .addOption(
      new Option('-o, --output <format>', 'output format')
        .choices(['table', 'json', 'yaml'])
        .default('table'),
    )
    .option('--summary', 'counts per cloud, scope and Kubernetes version, and the clusters that need a look')
    .option('--orphans', 'only the profiles of scopes the configuration no longer covers')
    .action(async (options: { output: string; summary?: boolean; orphans?: boolean }) => {
      finish(await listCommand(loadConfig(program.opts().config).config, options, io));
    });

  program
    .command('prune')
    .description(
      'delete the profiles of scopes the configuration no longer covers (a dry run unless --yes), announcing each deletion',
    )
    .option('--orphans', 'what to prune: the orphans (`cpsync list --orphans` shows them)')
    .option('--yes', 'delete them (without it, only say what would be deleted)')
    .action(async (options: { orphans?: boolean; yes?: boolean }) => {
      if (!options.orphans) {
        io.stderr.write('cpsync: say what to prune: --orphans\n');
        finish(ExitCode.Usage);
        return;
      }
      finish(
        await orphansCommand(
          loadConfig(program.opts().config).config,
          { output: 'table', prune: true, ...(options.yes ? { yes: true } : {}) },
          io,
        ),
      );
    });

  program
    .command('report')
    .description("write the hub's inventory as one self-contained HTML page (opens from disk)")
    .option('-o, --output <file>', 'the page to write', 'cpsync-report.html')
    .action(async (options: { output: string }) => {
      const loaded = loadConfig(program.opts().config);
      finish(await reportCommand(loaded.config, loaded.source, options.output, io));
    });

  program
    .command('announce')
    .description(
      'publish the inventory as it is (one ClusterProfile Announced event per profile) so subscribers can rebuild their state',
    )
    .option('--all', 'every profile of the inventory')
    .option('-p, --provider <provider>', 'only profiles of this provider; repeatable', parseProvider)
    .option('-s, --scope <provider/account[/region]>', 'only profiles of this scope; repeatable', parseScope)
    .option(
      '-n, --namespace <namespace>',
      'only profiles in this hub namespace; repeatable',
      (value: string, previous: string[] = []) => [...previous, value],
    )
    .addOption(
      new Option(
        '--unguarded-hub <choice>',
        "profiles in a namespace where the hub's admission policy does not keep others from writing them: refuse (withheld, with the reason) or trust (a hub whose ClusterProfile writers are all trusted)",
      )
        .choices(['refuse', 'trust'])
        .default('refuse'),
    )
    .action(async (options) => {
      finish(await announceCommand(loadConfig(program.opts().config).config, options, io));
    });

  const configuration = () => loadConfig(program.opts().config).config;
  addConsumersCommand(program, io, configuration, finish);
  addHubCommand(program, io, configuration, finish);

  credentialsOptions(program.command('credentials')).action(async (flags) => {
    finish(await printCredential(flags, { stdout: io.stdout, stderr: io.stderr, env: process.env }));
  });

  program
    .command('doctor')
    .description(
      'check, changing nothing, that cpsync can reach the hub (and may write there), the bus, the outbox and every configured scope',
    )
    .option(
      '--function <name>',
      "run the checks in a deployed stack's scope worker, with its role (the stack's DoctorFunction output); Argo CD's namespace, for the check of Secrets there, is this configuration's",
    )
    .addOption(new Option('-o, --output <format>', 'output format').choices(['text', 'json']).default('text'))
    .action(async (options: { function?: string; output: string }) => {
      finish(await doctorCommand(program.opts().config, options, io));
    });

  program
    .command('validate-config')
    .description('check the configuration and say what is wrong')
    .action(() => {
      const { source } = loadConfig(program.opts().config);
      io.stdout.write(`${printable(source)}: valid\n`);
    });
  return program;
}

/** Runs the `cpsync` command line; resolves to the exit code. */
export async function main(
  argv: string[],
  io: Io = { stdout: process.stdout, stderr: process.stderr },
): Promise<number> {
  let code: number = ExitCode.Ok;
  const program = cpsyncProgram(io, (exitCode) => {
    code = exitCode;
  });
  try {
    await program.parseAsync(argv, { from: 'user' });
    return code;
  } catch (error) {
    if (error instanceof CommanderError) return error.exitCode === 0 ? ExitCode.Ok : ExitCode.Usage;
    if (error instanceof CpsyncError && error.name === 'ConfigError') {
      io.stderr.write(`${printableLines(error.message)}\n`);
      return ExitCode.Usage;
    }
    // Bad configuration found on contact (a file, a secret, a kubeconfig): one line, never a stack trace.
    if (error instanceof CpsyncError) {
      io.stderr.write(`cpsync: ${printableLines(error.message)}\n`);
      return ExitCode.Usage;
    }
    io.stderr.write(
      `cpsync: ${printableLines(process.env.CPSYNC_DEBUG && error instanceof Error ? (error.stack ?? messageOf(error)) : firstLineOf(error, Infinity))}\n`,
    );
    return ExitCode.Incomplete;
  }
}
