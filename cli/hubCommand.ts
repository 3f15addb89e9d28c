/** `cpsync hub install`: the hub made ready for the configuration, applied or printed for GitOps. */
import type { Command } from 'commander';
import { InvalidArgumentError, Option } from 'commander';
import { CpsyncError } from '../core/domain/errors.ts';
import type { CpsyncConfig } from '../adapters/compose/config.ts';
import { subscriberSubjectProblem, subscriberUser } from '../adapters/compose/consumers.ts';
import {
  HubError,
  INSTALL_FIELD_MANAGER,
  hubInstallManifests,
  installHub,
  type HubIdentity,
  type HubInstallRequest,
} from '../adapters/compose/hubInstall.ts';
import { formatYaml } from './format.ts';
import { printable, printableLines } from './terminal.ts';

/** What was asked on the command line in a way no parser can tell alone (the command exits 2). */
class UsageError extends CpsyncError {}

interface IoStreams {
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
}

interface InstallFlags {
  user?: string;
  group?: string;
  eksRole?: string[];
  argocdUser?: string;
  argocdGroup?: string;
  argocdEksRole?: string;
  admissionPolicy: HubInstallRequest['admissionPolicy'];
  kubeconfig?: string;
  context?: string;
  dryRun?: boolean;
}

/** EKS: an IAM role ARN, as an access entry's principal takes it. */
const ROLE_ARN = /^arn:aws(-[a-z]+)*:iam::\d{12}:role\/[\w+=,.@/-]{1,512}$/;
/** Prefixes EKS keeps for itself: an access entry's username or group may not start with them. */
const EKS_RESERVED = ['system:', 'eks:', 'aws:', 'amazon:', 'iam:'];

function roleArn(value: string, previous: string[] = []): string[] {
  if (!ROLE_ARN.test(value))
    throw new InvalidArgumentError(
      `expected an IAM role ARN such as arn:aws:iam::111122223333:role/cpsync, got ${JSON.stringify(value)}`,
    );
  return [...previous, value];
}

/** A user or group name: text a person can read back, nothing that acts on a terminal or needs trimming. */
function identityName(value: string): string {
  if (value === '' || value.trim() !== value || printable(value) !== value || value.length > 253)
    throw new InvalidArgumentError(
      `expected a user or group name (1-253 printable characters, no surrounding spaces), got ${JSON.stringify(value)}`,
    );
  return value;
}

/** The identity the flags name, and the EKS roles to map to it. */
function identityOf(flags: InstallFlags): { identity: HubIdentity; roles: string[] } {
  const roles = flags.eksRole ?? [];
  if (flags.user !== undefined && flags.group !== undefined)
    throw new UsageError('hub install: give --user or --group, not both: cpsync is one identity');
  const identity: HubIdentity | undefined =
    flags.group !== undefined
      ? { kind: 'Group', name: flags.group }
      : flags.user !== undefined
        ? { kind: 'User', name: flags.user }
        : roles.length > 0
          ? { kind: 'User', name: 'cpsync' }
          : undefined;
  if (!identity)
    throw new UsageError(
      'hub install: say who cpsync is on the hub: --user <name>, --group <name>, or --eks-role <arn> for an EKS hub (mapped to the user cpsync, or to --user)',
    );
  const reserved = EKS_RESERVED.find((prefix) => identity.name.startsWith(prefix));
  if (roles.length > 0 && reserved)
    throw new UsageError(
      `hub install: --${identity.kind === 'User' ? 'user' : 'group'} ${printable(identity.name)}: EKS maps no access entry to a ${identity.kind === 'User' ? 'username' : 'group'} starting with ${reserved}`,
    );
  return { identity, roles };
}

/**
 * The Argo CD subscriber's identity the flags name (with the configuration's `subscribers.argocd`): never cpsync's,
 * nor mapped from one of cpsync's roles.
 */
function subscriberOf(
  config: CpsyncConfig,
  flags: InstallFlags,
  cpsync: { identity: HubIdentity; roles: string[] },
): { identity: HubIdentity; role?: string } | undefined {
  const asked = ['argocdUser', 'argocdGroup', 'argocdEksRole'] as const;
  const given = asked.filter((flag) => flags[flag] !== undefined);
  if (!config.subscribers?.argocd) {
    if (given.length > 0)
      throw new UsageError(
        `hub install: --${given[0]!.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}: the configuration has no Argo CD subscriber (subscribers.argocd)`,
      );
    return undefined;
  }
  if (flags.argocdUser !== undefined && flags.argocdGroup !== undefined)
    throw new UsageError(
      'hub install: give --argocd-user or --argocd-group, not both: the subscriber is one identity',
    );
  const identity: HubIdentity =
    flags.argocdGroup !== undefined
      ? { kind: 'Group', name: flags.argocdGroup }
      : { kind: 'User', name: flags.argocdUser ?? subscriberUser(config) };
  if (identity.kind === cpsync.identity.kind && identity.name === cpsync.identity.name)
    throw new UsageError(
      `hub install: the Argo CD subscriber is an identity of its own, not cpsync's (${spell(identity)}): name another with --argocd-user or --argocd-group`,
    );
  const refused = subscriberSubjectProblem(identity);
  if (refused)
    throw new UsageError(`hub install: ${refused}: name another with --argocd-user or --argocd-group`);
  const role = flags.argocdEksRole;
  if (role !== undefined && cpsync.roles.includes(role))
    throw new UsageError(
      `hub install: --argocd-eks-role ${role} is also an --eks-role: the subscriber's role (the stack's ArgoCdHubRole) is never mapped to cpsync`,
    );
  const reserved = EKS_RESERVED.find((prefix) => identity.name.startsWith(prefix));
  if (role !== undefined && reserved)
    throw new UsageError(
      `hub install: the subscriber's ${spell(identity)}: EKS maps no access entry to a name starting with ${reserved}`,
    );
  return { identity, ...(role !== undefined ? { role } : {}) };
}

/** A word for a shell: quoted when it holds anything a shell would act on. */
const shellWord = (word: string) =>
  /^[\w./:@=,+-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`;

/** The `aws eks create-access-entry` commands that map each role to the identity, on the configuration's EKS hub. */
function accessEntryCommands(
  config: CpsyncConfig,
  roles: readonly string[],
  identity: HubIdentity,
): string[] {
  const hub = config.hub && 'eks' in config.hub ? config.hub.eks : undefined;
  return roles.map((role) =>
    [
      'aws eks create-access-entry',
      `--cluster-name ${hub ? shellWord(hub.clusterName) : '<hub cluster>'}`,
      `--region ${hub ? shellWord(hub.region) : '<region>'}`,
      `--principal-arn ${shellWord(role)}`,
      '--type STANDARD',
      identity.kind === 'User'
        ? `--username ${shellWord(identity.name)}`
        : `--kubernetes-groups ${shellWord(identity.name)}`,
    ].join(' '),
  );
}

const spell = (identity: HubIdentity) => `${identity.kind === 'User' ? 'user' : 'group'} ${identity.name}`;

async function install(config: CpsyncConfig, flags: InstallFlags, io: IoStreams): Promise<number> {
  const { identity, roles } = identityOf(flags);
  const subscriber = subscriberOf(config, flags, { identity, roles });
  const request: HubInstallRequest = {
    identity,
    admissionPolicy: flags.admissionPolicy,
    ...(subscriber ? { subscriber: subscriber.identity } : {}),
  };
  const said = (text: string) => io.stderr.write(`cpsync: ${printableLines(text)}\n`);
  if (flags.dryRun) {
    const manifests = await hubInstallManifests(config, request);
    // Plain data: objects written once each (YAML would make anchors and aliases of shared ones).
    io.stdout.write(manifests.map((m) => formatYaml(JSON.parse(JSON.stringify(m)))).join('---\n'));
    said(
      `hub install --dry-run: ${manifests.length} manifests for the ${spell(identity)}; nothing applied (apply them with server-side apply, e.g. kubectl apply --server-side --field-manager ${INSTALL_FIELD_MANAGER} -f -)`,
    );
  } else {
    let applied;
    try {
      applied = await installHub(config, request, {
        ...(flags.kubeconfig ? { kubeconfig: flags.kubeconfig } : {}),
        ...(flags.context ? { context: flags.context } : {}),
      });
    } catch (error) {
      if (!(error instanceof HubError)) throw error;
      said(`hub install: ${error.message}`);
      return 1;
    }
    for (const object of applied)
      io.stdout.write(
        `${printable(`${object.kind.toLowerCase()} ${object.namespace ? `${object.namespace}/` : ''}${object.name}`)} ${object.outcome}\n`,
      );
    const count = (outcome: string) => applied.filter((o) => o.outcome === outcome).length;
    said(
      `hub install: the hub is ready for the ${spell(identity)}: ${applied.length} objects, ${count('created')} created, ${count('changed')} changed, ${count('unchanged')} unchanged (field manager ${INSTALL_FIELD_MANAGER})`,
    );
  }
  if (roles.length > 0) {
    said(
      `on an EKS hub, map ${roles.length > 1 ? 'each role' : 'the role'} to the ${spell(identity)} with an access entry (no access policy: the RBAC above grants what cpsync needs):`,
    );
    for (const command of accessEntryCommands(config, roles, identity))
      io.stderr.write(`  ${printable(command)}\n`);
  }
  if (subscriber) {
    const argocd = config.subscribers!.argocd!;
    if (argocd.kubeconfigSecretArn)
      said(
        `the Argo CD subscriber (${spell(subscriber.identity)}): its hub RBAC is here; Argo CD runs on another cluster (subscribers.argocd.kubeconfigSecretArn), so apply its Secrets Role and their admission policy there: cpsync consumers argocd-subscriber --part rbac (the Role, RoleBinding and policy of namespace ${argocd.namespace})`,
      );
    if (subscriber.role) {
      said(`on an EKS hub, map the Argo CD subscriber's role to the ${spell(subscriber.identity)}:`);
      for (const command of accessEntryCommands(config, [subscriber.role], subscriber.identity))
        io.stderr.write(`  ${printable(command)}\n`);
      if (subscriber.identity.kind === 'User')
        said(
          `(an entry made for that role earlier, mapping it to cpsync: aws eks update-access-entry --principal-arn ${subscriber.role} --username ${subscriber.identity.name}, with the same --cluster-name and --region)`,
        );
    } else if (config.hub && 'eks' in config.hub)
      said(
        `the Argo CD subscriber reaches the hub as the ${spell(subscriber.identity)}: give its role (the stack's ArgoCdHubRole output) with --argocd-eks-role for the access entry that maps it`,
      );
  }
  return 0;
}

/** Adds `cpsync hub install`; `run` runs an action and records its exit code. */
export function addHubCommand(
  program: Command,
  io: IoStreams,
  loaded: () => CpsyncConfig,
  done: (code: number) => void,
): void {
  const hub = program.command('hub').description('prepare the hub cpsync writes to');
  hub
    .command('install')
    .description(
      "apply what the hub needs for the configuration, with server-side apply: the ClusterProfile CRD, every inventory namespace, cpsync's RBAC (a RoleBinding per inventory namespace) and the admission policy, for the identity cpsync runs as; running it again changes nothing",
    )
    .option(
      '--user <name>',
      'cpsync authenticates as this Kubernetes user (with --eks-role: the username its access entries map to; default cpsync)',
      identityName,
    )
    .option('--group <name>', 'cpsync authenticates as a member of this Kubernetes group', identityName)
    .option(
      '--eks-role <arn>',
      'an IAM role cpsync runs as on an EKS hub (each function role); prints the access entry that maps it; repeatable',
      roleArn,
    )
    .option(
      '--argocd-user <name>',
      "with subscribers.argocd: the Argo CD subscriber's own user on the hub (default <manager>-argocd; never cpsync's)",
      identityName,
    )
    .option(
      '--argocd-group <name>',
      "the Argo CD subscriber's identity: a member of this group",
      identityName,
    )
    .option(
      '--argocd-eks-role <arn>',
      "the Argo CD subscriber's IAM role on an EKS hub (the stack's ArgoCdHubRole); prints the access entry that maps it to its own user",
      (value: string) => roleArn(value)[0]!,
    )
    .addOption(
      new Option(
        '--admission-policy <where>',
        "where the admission policy keeps others from writing cpsync's profiles: every namespace, the inventory namespaces only, or not installed (Kubernetes before 1.30)",
      )
        .choices(['all', 'inventory', 'none'])
        .default('all'),
    )
    .option(
      '--kubeconfig <file>',
      "apply as this kubeconfig (an administrator's) instead of the configuration's hub",
    )
    .option('--context <name>', 'the kubeconfig context to apply as')
    .option('--dry-run', 'print the manifests (YAML, --- separated) for GitOps instead of applying them')
    .addHelpText(
      'after',
      `
Nothing is deleted: a namespace the configuration no longer names keeps its RoleBinding until you remove it.

Examples:
  cpsync hub install --config cpsync.yaml --user cpsync --kubeconfig admin.kubeconfig
  cpsync hub install --config cpsync.yaml --eks-role arn:aws:iam::111122223333:role/cpsync/Cpsync-ScopeWorker
  cpsync hub install --config cpsync.yaml --user cpsync --dry-run > hub.yaml`,
    )
    .action(async (flags: InstallFlags) => {
      done(await install(loaded(), flags, io));
    });
}
