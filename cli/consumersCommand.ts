/** `cpsync consumers <kind>`: what a consumer of the inventory needs, printed from the configuration. */
import type { Command } from 'commander';
import { Argument, InvalidArgumentError, Option } from 'commander';
import type { CpsyncConfig } from '../adapters/compose/config.ts';
import {
  CONSUMER_KINDS,
  ConsumerSetupError,
  consumerSetup,
  type ConsumerKind,
  type ConsumerRequest,
  type ConsumerSetup,
  type HubSubject,
} from '../adapters/compose/consumers.ts';
import type { Provider } from '../core/domain/model/observedCluster.ts';
import { formatYaml } from './format.ts';
import { printableJson, printableLines } from './terminal.ts';

interface IoStreams {
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
}

/** Each part on its own (`--part`), the key it has in the whole, and the form it is used in. */
const PARTS = {
  'provider-file': { key: 'providerFile', format: 'json' },
  'kueue-configuration': { key: 'kueueConfiguration', format: 'yaml' },
  'argocd-integration': { key: 'argocdIntegration', format: 'yaml' },
  'argocd-subscriber': { key: 'argocdSubscriber', format: 'yaml' },
  rbac: { key: 'rbac', format: 'yaml' },
  'consumer-entry': { key: 'consumerEntry', format: 'yaml' },
} as const satisfies Record<string, { key: keyof ConsumerSetup; format: 'json' | 'yaml' }>;
type Part = keyof typeof PARTS;

interface Flags {
  namespace?: string[];
  command?: string;
  plugin?: string | false;
  eksRoleName?: string;
  eksRoleArn?: string;
  googleCredentials?: string;
  env?: Array<{ name: string; value: string }>;
  subject?: HubSubject;
  name?: string;
  level?: 'view' | 'edit' | 'admin';
  identity?: Partial<Record<Provider, string>>;
  argocdNamespace?: string;
  part?: Part;
  output?: 'json' | 'yaml';
}

const repeat = (value: string, previous: string[] = []) => [...previous, value];

function envVar(value: string, previous: Array<{ name: string; value: string }> = []) {
  const at = value.indexOf('=');
  if (at <= 0) throw new InvalidArgumentError(`expected NAME=VALUE, got ${JSON.stringify(value)}`);
  return [...previous, { name: value.slice(0, at), value: value.slice(at + 1) }];
}

function subject(value: string): HubSubject {
  const [kind, rest = ''] = [value.slice(0, value.indexOf(':')), value.slice(value.indexOf(':') + 1)];
  if ((kind === 'user' || kind === 'group') && rest !== '')
    return { kind: kind === 'user' ? 'User' : 'Group', name: rest };
  const [namespace, name, ...more] = rest.split('/');
  if (kind === 'serviceaccount' && namespace && name && more.length === 0)
    return { kind: 'ServiceAccount', namespace, name };
  throw new InvalidArgumentError(
    `expected user:<name>, group:<name> or serviceaccount:<namespace>/<name>, got ${JSON.stringify(value)}`,
  );
}

function identity(value: string, previous: Partial<Record<Provider, string>> = {}) {
  const at = value.indexOf('=');
  const cloud = value.slice(0, at);
  if (at <= 0 || !['eks', 'gke', 'aks'].includes(cloud) || at === value.length - 1)
    throw new InvalidArgumentError(
      `expected eks=<IAM role ARN>, gke=<service account or principal> or aks=<Entra object id>, got ${JSON.stringify(value)}`,
    );
  return { ...previous, [cloud]: value.slice(at + 1) };
}

/** The object a part is, as the form asked: an array of manifests is one YAML stream, or a JSON List. */
function formatPart(value: unknown, format: 'json' | 'yaml'): string {
  if (Array.isArray(value))
    return format === 'json'
      ? `${printableJson({ apiVersion: 'v1', kind: 'List', items: value }, 2)}\n`
      : value.map((item) => formatYaml(item)).join('---\n');
  return format === 'json' ? `${printableJson(value, 2)}\n` : formatYaml(value);
}

/** The parts `setup` has, in the order they are printed. */
const partsOf = (setup: ConsumerSetup) =>
  (Object.keys(PARTS) as Part[]).filter((p) => setup[PARTS[p].key] !== undefined);

function print(kind: ConsumerKind, setup: ConsumerSetup, flags: Flags, io: IoStreams): void {
  // Plain data: objects written once each (YAML would make anchors and aliases of shared ones).
  const whole = JSON.parse(
    JSON.stringify({
      consumer: kind,
      namespaces: setup.namespaces,
      ...Object.fromEntries(partsOf(setup).map((p) => [PARTS[p].key, setup[PARTS[p].key]])),
    }),
  ) as Record<string, unknown>;
  if (flags.part) {
    const part = PARTS[flags.part];
    const value = whole[part.key];
    if (value === undefined) {
      const has = partsOf(setup);
      throw new ConsumerSetupError(
        `--part: ${kind} has no ${flags.part}${flags.part === 'consumer-entry' ? ' (give its identities: --identity)' : flags.part === 'rbac' ? ' (say who it is on the hub: --subject user:<name>, group:<name> or serviceaccount:<namespace>/<name>)' : ''}; its parts: ${has.join(', ')}`,
      );
    }
    io.stdout.write(formatPart(value, flags.output ?? part.format));
  } else if (flags.output === 'json') io.stdout.write(`${printableJson(whole, 2)}\n`);
  else
    io.stdout.write(
      `# What ${kind} needs from this configuration; one part alone: --part <${partsOf(setup).join('|')}>\n${formatYaml(whole)}`,
    );
  for (const note of setup.notes) io.stderr.write(`cpsync: ${printableLines(note)}\n`);
}

/** Adds `cpsync consumers <kind>`; `done` records its exit code. */
export function addConsumersCommand(
  program: Command,
  io: IoStreams,
  loaded: () => CpsyncConfig,
  done: (code: number) => void,
): void {
  program
    .command('consumers')
    .description(
      "print what a consumer of the inventory needs from this configuration: its access providers (the provider file, Kueue's configuration, the Argo CD integration's or subscriber's settings), the RBAC it needs on the hub, and its consumers: entry",
    )
    .addArgument(new Argument('<kind>', 'the consumer').choices(CONSUMER_KINDS))
    .option(
      '-n, --namespace <namespace>',
      "an inventory namespace it reads; repeatable (default: the consumer's own — kueue-system, argocd — or the inventory's)",
      repeat,
    )
    .option(
      '--command <path>',
      'the program the consumer runs for a token, in its image (default /usr/local/bin/node; the Argo CD subscriber: cpsync)',
    )
    .option(
      '--plugin <file>',
      'the credential plugin file given to it first (default /opt/cpsync/cpsync-credentials.mjs)',
    )
    .option('--no-plugin', 'the command is the plugin itself (an executable cpsync-credentials)')
    .option(
      '--eks-role-name <name>',
      "EKS: assume this role of the cluster's account first (cpsync credentials --role-name)",
    )
    .option(
      '--eks-role-arn <arn>',
      'EKS: assume this role first (cpsync credentials --role-arn; {accountId}, {region}, {partition} filled in)',
    )
    .option(
      '--google-credentials <file>',
      'GKE: the credentials file in its image (cpsync credentials --google-credentials)',
    )
    .option('--env <NAME=VALUE>', 'an environment variable of the plugin; repeatable', envVar)
    .option(
      '--subject <who>',
      "who the consumer is on the hub, for its RoleBindings: user:<name>, group:<name> or serviceaccount:<namespace>/<name> (default: Kueue's and the integration's own ServiceAccounts; the subscriber: user:<manager>-argocd, its own, never cpsync's)",
      subject,
    )
    .option('--name <name>', "its name in consumers: (default: the kind's, kueue or argocd …)")
    .addOption(
      new Option('--level <level>', 'the level its consumers: entry grants').choices([
        'view',
        'edit',
        'admin',
      ]),
    )
    .option(
      '--identity <cloud=id>',
      'its identity in a cloud, for its consumers: entry (eks=<role ARN>, gke=<principal>, aks=<object id>); repeatable',
      identity,
    )
    .option(
      '--argocd-namespace <namespace>',
      'the Argo CD subscriber: where Argo CD reads its cluster Secrets (default argocd)',
    )
    .addOption(
      new Option('--part <part>', 'print one part alone, in the form it is used in').choices(
        Object.keys(PARTS),
      ),
    )
    .addOption(
      new Option('-o, --output <format>', 'output format (default: yaml; a part alone: its own)').choices([
        'json',
        'yaml',
      ]),
    )
    .addHelpText(
      'after',
      `
Examples:
  cpsync consumers kueue --part kueue-configuration          # merge into Kueue's controller_manager_config.yaml
  cpsync consumers access-library --subject serviceaccount:fleet/controller --part provider-file > providers.json
  cpsync consumers argocd-integration --part rbac | kubectl apply -f -`,
    )
    .action((kind: ConsumerKind, flags: Flags) => {
      const request: ConsumerRequest = {
        kind,
        ...(flags.namespace ? { namespaces: flags.namespace } : {}),
        ...(flags.command !== undefined ? { command: flags.command } : {}),
        ...(flags.plugin !== undefined ? { plugin: flags.plugin } : {}),
        ...(flags.eksRoleName ? { eksRoleName: flags.eksRoleName } : {}),
        ...(flags.eksRoleArn ? { eksRoleArn: flags.eksRoleArn } : {}),
        ...(flags.googleCredentials ? { googleCredentials: flags.googleCredentials } : {}),
        ...(flags.env ? { env: flags.env } : {}),
        ...(flags.subject ? { subject: flags.subject } : {}),
        ...(flags.name ? { name: flags.name } : {}),
        ...(flags.level ? { level: flags.level } : {}),
        ...(flags.identity ? { identities: flags.identity } : {}),
        ...(flags.argocdNamespace ? { argocdNamespace: flags.argocdNamespace } : {}),
      };
      print(kind, consumerSetup(loaded(), request), flags, io);
      done(0);
    });
}
