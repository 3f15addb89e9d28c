/**
 * `npm run demo`: cpsync end to end on the local estate, in one shell, in about a minute — a dry run, a
 * sync with its events, the inventory, then three changes in the clouds (an upgrade, a new cluster, a
 * deletion) and a sync that announces exactly those. Everything it starts is stopped at the end, and
 * on Ctrl-C; its files (in a temporary directory) are removed.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DeleteClusterCommand, EKSClient } from '@aws-sdk/client-eks';
import { parse, stringify } from 'yaml';
import { accountCredentials } from '../support/aws.ts';
import { runCli } from '../support/cli.ts';
import { holdTransition } from './transitions.ts';
import {
  AZURE_SUBSCRIPTION,
  EKS_ACCOUNT,
  GCP_PROJECT,
  gkeCluster,
  startEmulators,
  type Emulators,
} from './emulators.ts';

const bold = (text: string) => (process.stdout.isTTY ? `\u001b[1m${text}\u001b[0m` : text);

const directory = mkdtempSync(join(tmpdir(), 'cpsync-demo-'));
let emulators: Emulators | undefined;
let stopping = false;

async function cleanUp(code: number): Promise<never> {
  stopping = true;
  await emulators?.stop().catch(() => {});
  rmSync(directory, { recursive: true, force: true });
  process.exit(code);
}
for (const signal of ['SIGINT', 'SIGTERM'] as const)
  process.once(signal, () => {
    console.log(`\n${signal}: stopping the local clouds and removing ${directory}`);
    void cleanUp(signal === 'SIGINT' ? 130 : 143);
  });

/** Runs `cpsync …` as a user would; resolves to what it printed. */
const cpsync = (args: string[], config: string) =>
  runCli([...args, '--config', config], { cwd: directory, env: emulators!.env });

/** The change events of a run's stdout, one line each. */
function events(stdout: string): string[] {
  return stdout
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as { 'detail-type': string; detail: Record<string, unknown> })
    .map((event) => {
      const detail = event.detail as {
        name?: string;
        changedFields?: string[];
        cluster?: { provider: string; displayName: string; region: string };
        counts?: Record<string, number>;
        scope?: unknown;
      };
      if (event['detail-type'] === 'Inventory Scope Synced') {
        const c = detail.counts ?? {};
        const scope = detail.scope as { provider: string; account: string; region: string };
        return `  ${event['detail-type']} ${scope.provider}/${scope.account}/${scope.region}: ${c.created} created, ${c.updated} updated, ${c.deleted} deleted, ${c.unchanged} unchanged`;
      }
      const fields = detail.changedFields?.length ? ` [${detail.changedFields.join(', ')}]` : '';
      return `  ${event['detail-type']}: ${detail.cluster?.provider} ${detail.cluster?.displayName} (${detail.cluster?.region}) → ${detail.name}${fields}`;
    });
}

async function step(
  title: string,
  args: string[],
  config: string,
  show: (run: Awaited<ReturnType<typeof cpsync>>) => string,
) {
  console.log(`\n${bold(`$ cpsync ${args.join(' ')}`)}   # ${title}`);
  const run = await cpsync(args, config);
  if (stopping) return run;
  console.log(show(run).trimEnd());
  if (run.code !== 0) {
    console.error(run.stderr);
    throw new Error(`cpsync ${args.join(' ')} exited ${run.code}`);
  }
  return run;
}

try {
  const started = Date.now();
  console.log(bold('Starting the local clouds (moto for AWS, local GKE and Azure servers)...'));
  emulators = await startEmulators({ directory, log: () => {} });
  // The demo's own configuration: the estate's clouds, profiles as files, events as JSON lines on stdout,
  // and a deletion as soon as one complete listing misses a cluster.
  const document = parse(readFileSync(emulators.configPath, 'utf8')) as Record<
    string,
    Record<string, unknown>
  >;
  const config = join(directory, 'demo.yaml');
  writeFileSync(
    config,
    stringify({
      ...document,
      inventory: { ...document.inventory, deletionGraceListings: 1 },
      bus: { stdout: true },
      // A cluster in change is looked at again after 1 s, then every 2 s (the defaults: 10 s, then 20 s).
      follow: {
        firstDelaySeconds: 1,
        maxDelaySeconds: 2,
        maxMinutes: 5,
        eks: { minDelaySeconds: 1, maxDelaySeconds: 2 },
      },
    }),
  );
  console.log(
    `${emulators.clusters} clusters in 3 clouds, ready in ${((Date.now() - started) / 1000).toFixed(1)} s.`,
  );

  await step('what would change, writing nothing', ['sync', '--dry-run'], config, (r) => r.stdout);
  await step('sync: profiles written, one event per change', ['sync'], config, (r) =>
    [...events(r.stdout), r.stderr.split('\n')[0]].join('\n'),
  );
  await step('the inventory', ['list'], config, (r) => r.stdout);

  console.log(
    `\n${bold('Changing the clouds:')} AKS web upgraded to 1.31.2, GKE cluster ml created, EKS checkout deleted`,
  );
  const web = emulators.arm.clusters.get(AZURE_SUBSCRIPTION)!.find((c) => c.name === 'web')!;
  web.properties.currentKubernetesVersion = '1.31.2';
  emulators.gke.clusters
    .get(GCP_PROJECT)!
    .push(gkeCluster('ml', 'europe-west1', { currentMasterVersion: '1.31.1-gke.1146000' }));
  const eks = new EKSClient({
    endpoint: emulators.moto.endpoint,
    region: 'us-east-1',
    credentials: await accountCredentials(emulators.moto.endpoint, EKS_ACCOUNT),
  });
  await eks.send(new DeleteClusterCommand({ name: 'checkout' }));
  eks.destroy();

  await step('sync again: exactly those three changes', ['sync'], config, (r) =>
    [...events(r.stdout), r.stderr.split('\n')[0]].join('\n'),
  );
  await step('nothing changed since: nothing written, only the scope summaries', ['sync'], config, (r) =>
    [...events(r.stdout), r.stderr.split('\n')[0]].join('\n'),
  );
  console.log(
    `\n${bold('A cluster the cloud is still creating:')} GKE cluster ai, without endpoint or CA for 3 s, then ready`,
  );
  emulators.gke.clusters.get(GCP_PROJECT)!.push(gkeCluster('ai', 'europe-west1'));
  holdTransition(emulators, 'gke', 'ai', 'creating', 3000);
  await step(
    'sync --follow: its profile at once, then looked at again until it is ready',
    ['sync', '--follow'],
    config,
    (r) =>
      [
        ...events(r.stdout).filter((line) => !line.includes('Inventory Scope Synced')),
        ...r.stderr
          .split('\n')
          .filter((line) => /^(following| {2}\S+: (still|settled)|followed:)/.test(line)),
      ].join('\n'),
  );
  console.log(
    `\n${bold('Done')} in ${((Date.now() - started) / 1000).toFixed(0)} s. Next: docs/getting-started.md "Syncing your own clouds", and docs/deploying.md.`,
  );
  console.log(`Stopping the local clouds and removing ${directory}`);
  await cleanUp(0);
} catch (error) {
  if (!stopping) console.error(`demo: ${(error as Error).message}`);
  await cleanUp(1);
}
