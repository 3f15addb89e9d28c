/**
 * The Argo CD cluster Secret of a ClusterProfile (Argo CD's declarative cluster format: a Secret labelled
 * `argocd.argoproj.io/secret-type: cluster` with `name`, `server` and `config`). Argo CD reaches the cluster
 * with an exec provider that runs `cpsync credentials` with the cluster's flags (Argo CD has no
 * `provideClusterInfo`, so the flags carry what the profile's exec extension says); the Secret's labels
 * carry the profile's provider, region, account, ClusterSet and Kubernetes version, its standard topology labels
 * and cloud, and the labels cpsync copied from the cluster's tags, so ApplicationSet cluster generators can
 * select by them. Pure: no I/O.
 */
import {
  ARGOCD_SECRET_TYPE_LABEL as SECRET_TYPE_LABEL,
  LABEL_MANAGED_BY as MANAGED_BY_LABEL,
  MANAGED_BY_CPSYNC as MANAGED_BY,
  ANNOTATION_PROVIDER_ID,
  ANNOTATION_TAG_LABELS,
  DEFAULT_MANAGER,
  LABEL_ACCOUNT,
  LABEL_CLUSTER_MANAGER,
  LABEL_CLOUD,
  LABEL_PROJECTED_FROM,
  LABEL_PROVIDER,
  LABEL_REGION,
  LABEL_TOPOLOGY_REGION,
  LABEL_TOPOLOGY_ZONE,
  PROPERTY_CLUSTERSET,
} from '../../../core/domain/constants.ts';
import { serverCpsyncWrites } from '../../../core/domain/endpoints.ts';
import { isLabelValue, labelValue } from '../../../core/domain/labels.ts';
import { own } from '../../../core/domain/own.ts';
import { recordedTagLabels, refusedTagLabelKey } from '../../../core/domain/tagLabels.ts';
import { cut } from '../../../core/domain/text.ts';
import type { ClusterProfile } from '../../../core/domain/model/clusterProfile.ts';
import { isProvider, type Provider } from '../../../core/domain/model/observedCluster.ts';
import { PROFILE_NAMES } from '../../../core/domain/naming.ts';
import {
  serverProblem,
  TargetError,
  targetOfExtension,
  type Target,
} from '../../../adapters/credentials/target.ts';
import { untrustedReason } from '../../../core/domain/untrustedReason.ts';

export {
  ARGOCD_SECRET_TYPE_LABEL as SECRET_TYPE_LABEL,
  LABEL_MANAGED_BY as MANAGED_BY_LABEL,
  MANAGED_BY_CPSYNC as MANAGED_BY,
} from '../../../core/domain/constants.ts';
/** The profile a Secret was made from (`namespace/name`), and its uid and resourceVersion. */
export const PROFILE_ANNOTATION = 'cpsync.io/profile';
export const PROFILE_UID_ANNOTATION = 'cpsync.io/profile-uid';
/**
 * How the profile was taken as cpsync's when the Secret was written: `guarded` (the hub's admission policy kept others
 * from writing it) or `trusted` (the subscriber was told to trust the hub's writers). Only a `guarded` Secret is kept
 * while its namespace is not guarded; one without the mark (made before the subscriber judged the hub) is not.
 */
export const WRITTEN_UNDER_ANNOTATION = 'cpsync.io/written-under';
/**
 * When a reconcile first found the Secret's profile missing from the hub: the Secret goes only once it has been
 * missing for the grace (cpsync writes a profile someone else deleted again at its next sync).
 */
export const PROFILE_MISSING_SINCE_ANNOTATION = 'cpsync.io/profile-missing-since';
export type WrittenUnder = 'guarded' | 'trusted';
/** The profile's display name (its cluster's name), as the Secret was written. */
export const DISPLAY_NAME_ANNOTATION = 'cpsync.io/display-name';
export const PROFILE_VERSION_ANNOTATION = 'cpsync.io/profile-resource-version';
const EXEC_EXTENSION = 'client.authentication.k8s.io/exec';

export interface SecretOptions {
  /** Argo CD's namespace. */
  namespace: string;
  /** The credential plugin Argo CD runs. @default 'cpsync' */
  command?: string;
  /** Arguments added after the cluster's flags (e.g. `--role-name argocd`). */
  extraArgs?: readonly string[];
  /**
   * The manager whose profiles are acted on (the configuration's `inventory.manager`): only a profile whose label,
   * `spec.clusterManager.name` and `cpsync.io/provider-id` annotation say it wrote it gets a Secret.
   * @default 'cpsync'
   */
  manager?: string;
  /**
   * Clouds the configuration reaches on this machine (the configuration's local emulators): their profiles'
   * servers may be loopback addresses. @default none
   */
  localClouds?: readonly Provider[];
}

/** A Secret as the Kubernetes API takes it (`stringData` left out: `data` only, base64). */
export interface ClusterSecret {
  apiVersion: 'v1';
  kind: 'Secret';
  type: 'Opaque';
  metadata: {
    name: string;
    namespace: string;
    labels: Record<string, string>;
    annotations: Record<string, string>;
  };
  data: Record<string, string>;
}

/** What of a Secret tells whose it is. */
interface SecretMetadata {
  metadata?: { name?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
}

/**
 * Whether `secret` is cpsync's, of `manager`: labelled so, or, made before Secrets named their manager, made from a
 * profile under a name the manager gives the cluster the Secret is of (its provider label, provider id and display
 * name, as the Secret was written; the profile is the one its annotation names, else its own name's,
 * `cluster-<profile>`). A name's beginning does not tell: another manager's names may begin as this one's do (every
 * name of a manager `cpsync-eks` begins `cpsync-eks-`, as `cpsync`'s EKS names do), and both end in the same hash
 * of one cluster's id. Another manager's Secret (another hub's cpsync writing into the same Argo CD), or one that
 * names no cluster, is never changed or deleted.
 */
export function isManagersSecret(secret: SecretMetadata, manager: string): boolean {
  const { name = '', labels = {}, annotations = {} } = secret.metadata ?? {};
  if (own(labels, MANAGED_BY_LABEL) !== MANAGED_BY) return false;
  const named = own(labels, LABEL_CLUSTER_MANAGER);
  if (named !== undefined) return named === manager;
  const profile = own(annotations, PROFILE_ANNOTATION)?.split('/')[1] ?? name.replace(/^cluster-/, '');
  const provider = own(labels, LABEL_PROVIDER);
  const providerId = own(annotations, ANNOTATION_PROVIDER_ID);
  const displayName = own(annotations, DISPLAY_NAME_ANNOTATION);
  if (!isProvider(provider) || !providerId || displayName === undefined) return false;
  const cluster = { provider, providerId, name: displayName };
  return [...PROFILE_NAMES.candidates(manager, cluster), ...PROFILE_NAMES.legacy(manager, cluster)].includes(
    profile,
  );
}

/** The Secret's name: the profile's, prefixed (profile names are DNS-1123 and at most 63 characters). */
export function secretNameOf(profileName: string): string {
  return cut(`cluster-${profileName}`, 253);
}

const base64 = (text: string) => Buffer.from(text, 'utf8').toString('base64');

/** The `cpsync credentials` flags for the cluster the profile's exec extension names. */
function credentialArgs(target: Target): string[] {
  const flags: Array<[string, string | undefined]> = [
    ['--provider', target.provider],
    ['--cluster-name', target.cluster],
  ];
  if (target.provider === 'eks') flags.push(['--region', target.region], ['--account', target.accountId]);
  if (target.provider === 'gke') flags.push(['--project', target.projectId], ['--location', target.location]);
  if (target.provider === 'aks')
    flags.push(['--subscription', target.subscriptionId], ['--tenant-id', target.tenantId]);
  return [
    'credentials',
    ...flags.filter(([, v]) => v !== undefined && v !== '').flatMap(([f, v]) => [f, v!]),
  ];
}

/**
 * The labels of the profile a selector may choose its cluster by: the standard topology labels, the cloud, and the
 * labels cpsync copied from the cluster's tags (those its `cpsync.io/labels-from-tags` annotation names, and only
 * keys a tag label may have: never one of cpsync's own), each as the profile carries it.
 */
function selectableLabels(labels: Record<string, string>, annotations: Record<string, string>) {
  const keys = [
    LABEL_TOPOLOGY_REGION,
    LABEL_TOPOLOGY_ZONE,
    LABEL_CLOUD,
    ...recordedTagLabels(own(annotations, ANNOTATION_TAG_LABELS)).filter(
      (key) => refusedTagLabelKey(key) === undefined,
    ),
  ];
  const selectable: Record<string, string> = {};
  for (const key of keys) {
    const value = own(labels, key);
    if (value !== undefined && isLabelValue(value)) selectable[key] = value;
  }
  return selectable;
}

/**
 * The Secret for `profile`, or why there is none: a profile not written by the manager (see untrustedReason), a
 * projected copy (the cluster's own profile has one), or a profile with no access provider (no endpoint cpsync
 * could name).
 */
export function clusterSecretOf(
  profile: ClusterProfile,
  options: SecretOptions,
): { secret: ClusterSecret } | { skipped: string } {
  const untrusted = untrustedReason(profile, options.manager ?? DEFAULT_MANAGER);
  if (untrusted) return { skipped: untrusted };
  const { namespace, name, uid, resourceVersion, labels = {}, annotations = {} } = profile.metadata;
  if (labels[LABEL_PROJECTED_FROM])
    return { skipped: `a projected copy of ${labels[LABEL_PROJECTED_FROM]}'s profile; that one is used` };
  const access = profile.status?.accessProviders?.find((p) => p.cluster?.server);
  if (!access?.cluster) return { skipped: 'the profile names no endpoint (status.accessProviders is empty)' };
  // Argo CD sends the cluster's token to the server: only one cpsync itself would write (https, a real host,
  // never loopback, link-local or a metadata server, in its one spelling), whoever wrote the profile.
  const { server } = access.cluster;
  if (!serverCpsyncWrites(server, labels[LABEL_PROVIDER] ?? '', options.localClouds))
    return {
      skipped: `the profile's server ${JSON.stringify(server)} is not one cpsync writes (see docs/profiles.md): no Secret sends credentials there`,
    };
  const extension = access.cluster.extensions?.find((e) => e.name === EXEC_EXTENSION)?.extension;
  if (!extension) return { skipped: `the profile's access provider has no ${EXEC_EXTENSION} extension` };
  const ca = access.cluster['certificate-authority-data'];
  // The extension is any object the CRD keeps as written: one that names no cluster cpsync can reach is skipped.
  let target: Target;
  try {
    target = targetOfExtension(extension);
  } catch (error) {
    if (error instanceof TargetError) return { skipped: error.message };
    throw error;
  }
  // Argo CD cannot hand the plugin the server (it has no provideClusterInfo), so the plugin's own check of where the
  // token goes is made here: the cluster the extension names is of the profile's cloud, and the server is one such a
  // cluster is reached at (an EKS endpoint of its region, under AKS's domains).
  if (target.provider !== labels[LABEL_PROVIDER])
    return {
      skipped: `the profile's exec extension names a cluster of ${target.provider}, and the profile is of ${JSON.stringify(labels[LABEL_PROVIDER] ?? '')}: no Secret sends its token there`,
    };
  const misplaced = serverProblem(server, target, options.localClouds);
  if (misplaced) return { skipped: misplaced };
  const args = credentialArgs(target);
  const config = {
    execProviderConfig: {
      command: options.command ?? 'cpsync',
      args: [...args, ...(options.extraArgs ?? [])],
      apiVersion: 'client.authentication.k8s.io/v1beta1',
      installHint: 'cpsync credentials is the cpsync CLI (or its standalone credential plugin) on the PATH',
    },
    tlsClientConfig: { insecure: false, ...(ca ? { caData: ca } : {}) },
  };
  const property = (key: string) => profile.status?.properties?.find((p) => p.name === key)?.value;
  const clusterSet = property(PROPERTY_CLUSTERSET);
  const version = profile.status?.version?.kubernetes?.match(/^v?(\d+\.\d+)/)?.[1];
  const secretLabels: Record<string, string> = {
    // First: none of them may stand for a label of the Secret's own below.
    ...selectableLabels(labels, annotations),
    [SECRET_TYPE_LABEL]: 'cluster',
    [MANAGED_BY_LABEL]: MANAGED_BY,
    // Whose it is: another manager's subscriber (another hub's cpsync writing into the same Argo CD) leaves it alone.
    [LABEL_CLUSTER_MANAGER]: options.manager ?? DEFAULT_MANAGER,
    ...(labels[LABEL_PROVIDER] ? { [LABEL_PROVIDER]: labels[LABEL_PROVIDER] } : {}),
    ...(labels[LABEL_REGION] ? { [LABEL_REGION]: labels[LABEL_REGION] } : {}),
    ...(labels[LABEL_ACCOUNT] ? { [LABEL_ACCOUNT]: labels[LABEL_ACCOUNT] } : {}),
    ...(clusterSet ? { 'cpsync.io/clusterset': labelValue(clusterSet) } : {}),
    ...(version ? { 'cpsync.io/kubernetes-version': version } : {}),
    'cpsync.io/profile-namespace': labelValue(namespace),
  };
  return {
    secret: {
      apiVersion: 'v1',
      kind: 'Secret',
      type: 'Opaque',
      metadata: {
        name: secretNameOf(name),
        namespace: options.namespace,
        labels: secretLabels,
        annotations: {
          [PROFILE_ANNOTATION]: `${namespace}/${name}`,
          ...(uid ? { [PROFILE_UID_ANNOTATION]: uid } : {}),
          ...(resourceVersion ? { [PROFILE_VERSION_ANNOTATION]: resourceVersion } : {}),
          ...(annotations[ANNOTATION_PROVIDER_ID]
            ? { [ANNOTATION_PROVIDER_ID]: annotations[ANNOTATION_PROVIDER_ID] }
            : {}),
          [DISPLAY_NAME_ANNOTATION]: profile.spec.displayName ?? name,
        },
      },
      data: {
        name: base64(name),
        server: base64(server),
        config: base64(JSON.stringify(config)),
      },
    },
  };
}
