/**
 * `cpsync consumers <kind>`: what one consumer of the inventory needs, from the configuration — the access
 * providers it maps to `cpsync credentials` (the upstream access library's provider file, Kueue's
 * `multiKueue.clusterProfile`, the Argo CD integration's settings, the Argo CD subscriber's), the RBAC it needs on
 * the hub to read ClusterProfiles in the namespaces it reads, and (with the `accessGrants` feature) its
 * `consumers:` entry. Plain data, made from the configuration alone: nothing is read from the hub or a cloud.
 * One file because every kind is the same configuration read another way: apart, they would drift on which
 * namespaces and access providers they name.
 */
import { CpsyncError } from '../../core/domain/errors.ts';
import { inventoryNamespaces } from '../../core/domain/options.ts';
import type { Provider } from '../../core/domain/model/observedCluster.ts';
import { argocdSecretsPolicy } from './argocdSecretsPolicy.ts';
import { configDocument, ConfigError, inventoryOptionsOf, parseConfig, type CpsyncConfig } from './config.ts';

export const CONSUMER_KINDS = [
  'access-library',
  'multicluster-runtime',
  'kueue',
  'argocd-integration',
  'argocd-subscriber',
] as const;
export type ConsumerKind = (typeof CONSUMER_KINDS)[number];

/** Who a consumer is on the hub (the subject of its RoleBindings). */
export type HubSubject =
  { kind: 'User' | 'Group'; name: string } | { kind: 'ServiceAccount'; namespace: string; name: string };

export interface ConsumerRequest {
  kind: ConsumerKind;
  /** The inventory namespaces it reads. @default per kind (see CONSUMER_DEFAULTS) */
  namespaces?: readonly string[];
  /**
   * The program the consumer runs for a token. @default '/usr/local/bin/node' (the Argo CD subscriber: 'cpsync',
   * the command whose `credentials` its Secrets run)
   */
  command?: string;
  /**
   * The plugin file given to `command` first, or false when the command is the plugin itself.
   * @default '/opt/cpsync/cpsync-credentials.mjs' (none for the Argo CD subscriber)
   */
  plugin?: string | false;
  /** EKS: `cpsync credentials --role-name`, a role assumed in the cluster's account first. */
  eksRoleName?: string;
  /** EKS: `cpsync credentials --role-arn` (`{accountId}`, `{region}` and `{partition}` filled in). */
  eksRoleArn?: string;
  /** GKE: `cpsync credentials --google-credentials`, a key or credential configuration file. */
  googleCredentials?: string;
  /** Environment of the plugin, in every provider's exec configuration. @default [] */
  env?: ReadonlyArray<{ name: string; value: string }>;
  /** Its identity on the hub. @default per kind (none for the access library and multicluster-runtime) */
  subject?: HubSubject;
  /** Its name in `consumers:` (the condition `consumers.cpsync.io/<name>`). @default per kind */
  name?: string;
  /** The level it is granted (`consumers:` entry). @default per kind */
  level?: 'view' | 'edit' | 'admin';
  /** Its identities in the clouds (`consumers:` entry): an IAM role ARN, a Google principal, an Entra object id. */
  identities?: Partial<Record<Provider, string>>;
  /** The Argo CD subscriber: the namespace where Argo CD reads its cluster Secrets. @default 'argocd' */
  argocdNamespace?: string;
}

/** An access provider as the upstream access library's provider file (and Kueue, and the Argo CD integration) take it. */
export interface AccessProvider {
  name: string;
  execConfig: {
    apiVersion: string;
    command: string;
    args: string[];
    env: Array<{ name: string; value: string }>;
    provideClusterInfo: true;
    interactiveMode: 'Never';
  };
}

/** A Kubernetes object of the RBAC or the Argo CD integration's settings. */
export interface ConsumerManifest {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  [key: string]: unknown;
}

/** What the consumer needs; only the parts of its kind are set. */
export interface ConsumerSetup {
  kind: ConsumerKind;
  /** The inventory namespaces it reads. */
  namespaces: string[];
  /** The access library's `--clusterprofile-provider-file` (multicluster-runtime's, the Argo CD integration's). */
  providerFile?: { providers: AccessProvider[] };
  /** Kueue's Configuration: the ClusterProfile gate, its namespace and `multiKueue.clusterProfile`. */
  kueueConfiguration?: Record<string, unknown>;
  /** The Argo CD integration: a ConfigMap holding the provider file, and the patch of its Deployment mounting it. */
  argocdIntegration?: ConsumerManifest[];
  /** The Argo CD subscriber: its function's environment and the `ArgoCdClusterSync` props that give it. */
  argocdSubscriber?: {
    environment: Record<string, string>;
    constructProps: { namespace: string; credentialsCommand: string; credentialsArgs: string[] };
  };
  /**
   * The hub RBAC it needs: read ClusterProfiles in the namespaces it reads (and what else its kind does there); only
   * when who it is on the hub is known (its kind's own ServiceAccount, or `subject`).
   */
  rbac?: ConsumerManifest[];
  /** Its `consumers:` entry (the `accessGrants` feature), to paste into the configuration. */
  consumerEntry?: { consumers: Array<Record<string, unknown>> };
  /** What a person should know (said apart from the output). */
  notes: string[];
}

/** A request that cannot be answered as asked: names what is wrong (the command exits 2). */
export class ConsumerSetupError extends CpsyncError {}

const EXEC_API_VERSION = 'client.authentication.k8s.io/v1';
const DEFAULT_COMMAND = '/usr/local/bin/node';
const DEFAULT_PLUGIN = '/opt/cpsync/cpsync-credentials.mjs';
/** Where the Argo CD integration's Deployment gets the provider file from (its ConfigMap, mounted). */
const INTEGRATION = {
  deployment: 'argocd-clusterprofile-controller',
  configMap: 'cpsync-access-providers',
  key: 'providers.json',
  mountPath: '/etc/cpsync',
  env: 'ARGOCD_CLUSTERPROFILE_CONTROLLER_CLUSTER_PROFILE_PROVIDERS_FILE',
};
const RBAC_GROUP = 'rbac.authorization.k8s.io';
const PROFILES = { apiGroups: ['multicluster.x-k8s.io'], resources: ['clusterprofiles'] };

/** What each kind is by default: its name in `consumers:`, its level, its own namespace and identity on the hub. */
const CONSUMER_DEFAULTS: Readonly<
  Record<
    ConsumerKind,
    { name: string; level: 'view' | 'edit' | 'admin'; namespace?: string; serviceAccount?: string }
  >
> = {
  'access-library': { name: 'access-library', level: 'view' },
  'multicluster-runtime': { name: 'multicluster-runtime', level: 'view' },
  // Kueue's manifests run its manager as this ServiceAccount, in the namespace where it looks profiles up.
  kueue: {
    name: 'kueue',
    level: 'edit',
    namespace: 'kueue-system',
    serviceAccount: 'kueue-controller-manager',
  },
  // The integration's manifests run it as this ServiceAccount, in Argo CD's namespace, which it watches.
  'argocd-integration': {
    name: 'argocd',
    level: 'admin',
    namespace: 'argocd',
    serviceAccount: 'argocd-clusterprofile-controller',
  },
  'argocd-subscriber': { name: 'argocd', level: 'admin' },
};

/** The configured clouds, each with the access provider name its profiles carry (all three when none is configured). */
function clouds(config: CpsyncConfig): { providers: Provider[]; notes: string[] } {
  const configured = (['eks', 'gke', 'aks'] as const).filter((p) => config.providers[p]);
  if (configured.length > 0) return { providers: configured, notes: [] };
  return {
    providers: ['eks', 'gke', 'aks'],
    notes: ['the configuration names no cloud: an access provider for each of eks, gke and aks'],
  };
}

/** The namespaces `request` reads, checked against the configuration's inventory namespaces. */
function namespacesOf(config: CpsyncConfig, request: ConsumerRequest, name: string): string[] {
  const inventory = inventoryNamespaces(inventoryOptionsOf(config)).map((ns) => ns.name);
  const defaults = CONSUMER_DEFAULTS[request.kind];
  if (request.kind === 'argocd-subscriber') {
    if (request.namespaces)
      throw new ConsumerSetupError(
        '--namespace: the Argo CD subscriber reads every inventory namespace of the configuration; --argocd-namespace names where Argo CD reads its Secrets',
      );
    return inventory;
  }
  // As asked, else as the configuration's consumer of that name reads, else the kind's own namespace or the inventory's.
  const configured = config.consumers.find((c) => c.name === name)?.namespaces;
  const chosen = [
    ...new Set(
      request.namespaces ??
        configured ??
        (defaults.namespace ? [defaults.namespace] : [config.inventory.namespace]),
    ),
  ];
  const single = request.kind === 'kueue' || request.kind === 'argocd-integration';
  if (single && chosen.length !== 1)
    throw new ConsumerSetupError(
      `--namespace: ${request.kind === 'kueue' ? 'Kueue' : 'the Argo CD integration'} reads ClusterProfiles in its own namespace only; name one`,
    );
  const outside = chosen.filter((ns) => !inventory.includes(ns));
  if (outside.length > 0) {
    const how = single
      ? `project its clusters there (inventory.projections: - { …, namespaces: [${outside[0]}] }) or name the namespace it runs in with --namespace`
      : 'name one of them with --namespace';
    throw new ConsumerSetupError(
      `${request.namespaces ? '--namespace ' : ''}${outside.join(', ')}: cpsync writes no profile there (the inventory namespaces of this configuration: ${inventory.join(', ')}); ${how}`,
    );
  }
  return chosen;
}

/**
 * Who the Argo CD subscriber is on the hub unless told otherwise: a user of its own, named after the manager
 * (`cpsync-argocd`), so that two managers' subscribers writing into one Argo CD are told apart.
 */
export const subscriberUser = (config: CpsyncConfig) => `${config.manager}-argocd`;

/** The subject of a consumer's RoleBindings. */
function subjectOf(subject: HubSubject): Record<string, string> {
  return subject.kind === 'ServiceAccount'
    ? { kind: 'ServiceAccount', name: subject.name, namespace: subject.namespace }
    : { apiGroup: RBAC_GROUP, kind: subject.kind, name: subject.name };
}

const LABELS = { 'app.kubernetes.io/name': 'cpsync' };

/** Read ClusterProfiles (and for the Argo CD integration, update them: its finalizer) in each namespace. */
function rbacOf(
  request: ConsumerRequest,
  name: string,
  namespaces: readonly string[],
  subject: HubSubject,
  argocd: { namespace: string; manager: string },
): ConsumerManifest[] {
  const role = `cpsync:clusterprofiles:${name}`;
  const verbs = [
    'get',
    'list',
    'watch',
    ...(request.kind === 'argocd-integration' ? ['update', 'patch'] : []),
  ];
  const binding = (namespace: string, roleKind: string, roleName: string, bindingName = roleName) => ({
    apiVersion: `${RBAC_GROUP}/v1`,
    kind: 'RoleBinding',
    metadata: { name: bindingName, namespace, labels: LABELS },
    roleRef: { apiGroup: RBAC_GROUP, kind: roleKind, name: roleName },
    subjects: [subjectOf(subject)],
  });
  const manifests: ConsumerManifest[] = [
    {
      apiVersion: `${RBAC_GROUP}/v1`,
      kind: 'ClusterRole',
      metadata: { name: role, labels: LABELS },
      rules: [{ ...PROFILES, verbs }],
    },
    ...namespaces.map((namespace) => binding(namespace, 'ClusterRole', role)),
  ];
  if (request.kind === 'argocd-subscriber') {
    // Its cluster Secrets, in Argo CD's namespace (on the hub when Argo CD runs there, the default): named for its
    // manager, as two managers' subscribers may write into one Argo CD. `patch`: it marks a Secret whose profile is
    // missing.
    const secrets = `${argocd.manager}-${name}-clusters`;
    manifests.push(
      {
        apiVersion: `${RBAC_GROUP}/v1`,
        kind: 'Role',
        metadata: { name: secrets, namespace: argocd.namespace, labels: LABELS },
        rules: [
          {
            apiGroups: [''],
            resources: ['secrets'],
            verbs: ['get', 'list', 'create', 'update', 'patch', 'delete'],
          },
        ],
      },
      binding(argocd.namespace, 'Role', secrets),
      // Its Role reaches every Secret there: the policy holds it to its own cluster Secrets, of the form it writes, and
      // keeps every other writer from them.
      ...argocdSecretsPolicy({
        name: `${argocd.manager}-${name}-secrets`,
        writer: subject,
        manager: argocd.manager,
        namespace: argocd.namespace,
      }),
      // It acts only where the hub's admission policy keeps others from writing profiles: it reads the policy
      // through the ClusterRole rbac.yaml ships for that.
      {
        apiVersion: `${RBAC_GROUP}/v1`,
        kind: 'ClusterRoleBinding',
        metadata: { name: `cpsync:admission-policy:${argocd.manager}-${name}`, labels: LABELS },
        roleRef: { apiGroup: RBAC_GROUP, kind: 'ClusterRole', name: 'cpsync:admission-policy' },
        subjects: [subjectOf(subject)],
      },
    );
  }
  return manifests;
}

/**
 * The Argo CD subscriber's RBAC and Secrets policy (`cpsync consumers argocd-subscriber --part rbac`), apart: `hub`,
 * what it needs on the hub (read ClusterProfiles in every inventory namespace, read the hub's admission policy), and
 * `argocd`, what it needs where Argo CD runs (its Secrets Role in Argo CD's namespace and the policy bounding it).
 * `subject` defaults to its own user, `<manager>-argocd`.
 */
export function subscriberRbac(
  config: CpsyncConfig,
  options: { subject?: HubSubject; argocdNamespace?: string } = {},
): { hub: ConsumerManifest[]; argocd: ConsumerManifest[] } {
  const { rbac = [] } = consumerSetup(config, {
    kind: 'argocd-subscriber',
    ...(options.subject ? { subject: options.subject } : {}),
    ...(options.argocdNamespace ? { argocdNamespace: options.argocdNamespace } : {}),
  });
  const ofArgoCd = (m: ConsumerManifest) =>
    m.kind === 'Role' ||
    (m.kind === 'RoleBinding' && (m.roleRef as { kind?: string }).kind === 'Role') ||
    m.kind.startsWith('ValidatingAdmissionPolicy');
  return { hub: rbac.filter((m) => !ofArgoCd(m)), argocd: rbac.filter(ofArgoCd) };
}

/** The `consumers:` entry: the configured one of that name, else one made of the request (checked as the configuration checks it). */
function consumerEntryOf(
  config: CpsyncConfig,
  request: ConsumerRequest,
  name: string,
  namespaces: readonly string[],
  notes: string[],
): ConsumerSetup['consumerEntry'] {
  const document = configDocument(config) as { consumers: Array<Record<string, unknown>> };
  const configured = document.consumers.find((c) => c.name === name);
  const identities = Object.entries(request.identities ?? {});
  if (configured) {
    const reads = configured.namespaces as string[];
    const missing = namespaces.filter((ns) => !reads.includes(ns));
    if (missing.length > 0)
      notes.push(
        `the configuration's consumer ${name} reads ${reads.join(', ')}, not ${missing.join(', ')}: add ${missing.length > 1 ? 'them' : 'it'} to its namespaces to grant it the clusters there`,
      );
    if (identities.length > 0 || request.level)
      notes.push(`the consumer ${name} is in the configuration already: its entry is printed as configured`);
    return { consumers: [configured] };
  }
  if (identities.length === 0) {
    if (config.features.accessGrants)
      notes.push(
        `accessGrants is on: for the consumers: entry of ${name}, give its identities (--identity eks=<IAM role ARN>, gke=<service account or principal>, aks=<Entra object id>)`,
      );
    return undefined;
  }
  const field = { eks: 'roleArn', gke: 'principal', aks: 'objectId' } as const;
  const entry = {
    name,
    namespaces: [...namespaces],
    level: request.level ?? CONSUMER_DEFAULTS[request.kind].level,
    identities: Object.fromEntries(
      identities.map(([cloud, id]) => [cloud, { [field[cloud as Provider]]: id }]),
    ),
  };
  try {
    parseConfig({ ...document, consumers: [...document.consumers, entry] });
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    const at = `consumers[${document.consumers.length}]`;
    throw new ConsumerSetupError(
      `the consumers: entry for ${name} would not be valid: ${error.issues.map((i) => i.replace(at, 'consumer')).join('; ')}`,
    );
  }
  if (!config.features.accessGrants)
    notes.push('the consumers: entry grants nothing until the accessGrants feature is on');
  return { consumers: [entry] };
}

/**
 * Why `subject` cannot be the Argo CD subscriber's identity, or undefined: its Role and Secrets policy are bound to
 * it, so it must be one identity of its own — not cpsync's (rbac.yaml's user), and not one the API server gives
 * others (a `system:` user or group: `system:authenticated` is every user).
 */
export function subscriberSubjectProblem(subject: HubSubject): string | undefined {
  if (subject.kind === 'User' && subject.name === 'cpsync')
    return "the Argo CD subscriber is an identity of its own, not cpsync's (the user cpsync)";
  if (subject.kind !== 'ServiceAccount' && subject.name.startsWith('system:'))
    return `the Argo CD subscriber is an identity of its own, not the API server's ${subject.kind === 'User' ? 'user' : 'group'} ${subject.name} (a system: name stands for others)`;
  return undefined;
}

/** How the Argo CD subscriber's function comes to be `user` on the hub, where that takes a step of its own. */
function subscriberIdentityNotes(config: CpsyncConfig, user: string): string[] {
  const hub = config.hub;
  if (hub && 'eks' in hub)
    return [
      `on the EKS hub, map the subscriber's role (the stack's ArgoCdHubRole output) to the user ${user}: aws eks create-access-entry --cluster-name ${hub.eks.clusterName} --region ${hub.eks.region} --principal-arn <ArgoCdHubRole> --type STANDARD --username ${user} (an entry made for it earlier, mapping it to cpsync: aws eks update-access-entry --cluster-name ${hub.eks.clusterName} --region ${hub.eks.region} --principal-arn <ArgoCdHubRole> --username ${user})`,
    ];
  if (hub && 'kubeconfigSecretArn' in hub)
    return [
      `give the subscriber a kubeconfig of the user ${user} for the hub, in Secrets Manager, as subscribers.argocd.hubKubeconfigSecretArn: the hub's kubeconfig is cpsync's identity`,
    ];
  return [];
}

/** What the consumer `request` names needs, from `config`. */
export function consumerSetup(config: CpsyncConfig, request: ConsumerRequest): ConsumerSetup {
  const defaults = CONSUMER_DEFAULTS[request.kind];
  const name = request.name ?? defaults.name;
  const subscriber = request.kind === 'argocd-subscriber';
  if (subscriber && request.plugin)
    throw new ConsumerSetupError(
      "--plugin: the Argo CD subscriber's Secrets run `<command> credentials <the cluster's flags>`: give --command the cpsync command (or a wrapper of it); the standalone plugin takes no `credentials`",
    );
  if (request.command === '' || request.plugin === '')
    throw new ConsumerSetupError(`--${request.command === '' ? 'command' : 'plugin'}: must name a file`);
  if (request.eksRoleName && request.eksRoleArn)
    throw new ConsumerSetupError('--eks-role-name and --eks-role-arn: give one (the role assumed first)');
  const namespaces = namespacesOf(config, request, name);
  const notes: string[] = [];
  const subject: HubSubject | undefined =
    request.subject ??
    (defaults.serviceAccount
      ? { kind: 'ServiceAccount', namespace: namespaces[0]!, name: defaults.serviceAccount }
      : subscriber
        ? // An identity of its own, never cpsync's: cpsync's writes profiles, the subscriber's Argo CD's Secrets.
          { kind: 'User', name: subscriberUser(config) }
        : undefined);
  if (!subject)
    notes.push(
      `for the hub RBAC it needs, say who the ${request.kind === 'access-library' ? 'program using the access library' : 'multicluster-runtime manager'} is on the hub: --subject user:<name>, group:<name> or serviceaccount:<namespace>/<name>`,
    );
  const argocdNamespace = request.argocdNamespace ?? 'argocd';
  if (subscriber && subject) {
    const refused = subscriberSubjectProblem(subject);
    if (refused) throw new ConsumerSetupError(`--subject: ${refused}`);
  }
  if (subscriber && subject?.kind === 'User') notes.push(...subscriberIdentityNotes(config, subject.name));
  if (subscriber && subject && config.subscribers?.argocd?.kubeconfigSecretArn)
    notes.push(
      `Argo CD runs on another cluster (subscribers.argocd.kubeconfigSecretArn): apply the Role and RoleBinding in ${argocdNamespace} and the ValidatingAdmissionPolicy and its binding there, the rest on the hub`,
    );
  const eksArgs = request.eksRoleArn
    ? ['--role-arn', request.eksRoleArn]
    : request.eksRoleName
      ? ['--role-name', request.eksRoleName]
      : [];
  const gkeArgs = request.googleCredentials ? ['--google-credentials', request.googleCredentials] : [];
  const setup: ConsumerSetup = {
    kind: request.kind,
    namespaces,
    ...(subject
      ? {
          rbac: rbacOf(request, name, namespaces, subject, {
            namespace: argocdNamespace,
            manager: config.manager,
          }),
        }
      : {}),
    notes,
  };
  if (subscriber) {
    const command = request.command ?? 'cpsync';
    const args = [...eksArgs, ...gkeArgs];
    setup.argocdSubscriber = {
      environment: {
        ARGOCD_NAMESPACE: argocdNamespace,
        ARGOCD_CREDENTIALS_COMMAND: command,
        ARGOCD_CREDENTIALS_ARGS: JSON.stringify(args),
      },
      constructProps: { namespace: argocdNamespace, credentialsCommand: command, credentialsArgs: args },
    };
    if (request.env?.length)
      notes.push('--env: the subscriber writes no environment into its Secrets; set it where Argo CD runs');
  } else {
    const { providers: cloudsOf, notes: cloudNotes } = clouds(config);
    notes.push(...cloudNotes);
    const plugin = request.plugin === false ? [] : [request.plugin ?? DEFAULT_PLUGIN];
    const providers = cloudsOf.map((cloud): AccessProvider => ({
      name: config.inventory.accessProviderNames[cloud],
      execConfig: {
        apiVersion: EXEC_API_VERSION,
        command: request.command ?? DEFAULT_COMMAND,
        args: [...plugin, ...(cloud === 'eks' ? eksArgs : cloud === 'gke' ? gkeArgs : [])],
        env: (request.env ?? []).map((v) => ({ name: v.name, value: v.value })),
        provideClusterInfo: true,
        interactiveMode: 'Never',
      },
    }));
    if (request.kind === 'kueue') {
      setup.kueueConfiguration = {
        apiVersion: 'config.kueue.x-k8s.io/v1beta2',
        kind: 'Configuration',
        namespace: namespaces[0],
        featureGates: { MultiKueueClusterProfile: true },
        multiKueue: { clusterProfile: { credentialsProviders: providers } },
      };
    } else {
      setup.providerFile = { providers };
    }
    if (request.kind === 'argocd-integration') {
      const namespace = namespaces[0]!;
      setup.argocdIntegration = [
        {
          apiVersion: 'v1',
          kind: 'ConfigMap',
          metadata: { name: INTEGRATION.configMap, namespace, labels: LABELS },
          data: { [INTEGRATION.key]: `${JSON.stringify({ providers }, null, 2)}\n` },
        },
        {
          apiVersion: 'apps/v1',
          kind: 'Deployment',
          metadata: { name: INTEGRATION.deployment, namespace },
          spec: {
            template: {
              spec: {
                containers: [
                  {
                    name: INTEGRATION.deployment,
                    env: [{ name: INTEGRATION.env, value: `${INTEGRATION.mountPath}/${INTEGRATION.key}` }],
                    volumeMounts: [
                      { name: INTEGRATION.configMap, mountPath: INTEGRATION.mountPath, readOnly: true },
                    ],
                  },
                ],
                volumes: [{ name: INTEGRATION.configMap, configMap: { name: INTEGRATION.configMap } }],
              },
            },
          },
        },
      ];
    }
  }
  const entry = consumerEntryOf(config, request, name, namespaces, notes);
  if (entry) setup.consumerEntry = entry;
  return setup;
}
