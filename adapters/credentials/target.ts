import { z } from 'zod';
import { canonicalServer } from '../../core/domain/endpoints.ts';
import { AWS_REGION } from '../../core/domain/scopes.ts';
import { awsPartitionOf } from '../shared/awsPartition.ts';

/**
 * What the credential plugin gets a token for: the cluster's cloud and what that cloud's token needs.
 * It comes from the profile's `client.authentication.k8s.io/exec` extension (handed over by client-go in
 * KUBERNETES_EXEC_INFO) and from the plugin's flags, flags winning.
 */
export type Target =
  | { provider: 'eks'; cluster: string; region: string; accountId?: string }
  | { provider: 'gke'; cluster?: string; projectId?: string; location?: string }
  | { provider: 'aks'; cluster?: string; tenantId?: string; subscriptionId?: string };

/** The ExecCredential versions client-go speaks; the answer must carry the version it was asked in. */
export const EXEC_API_VERSIONS = [
  'client.authentication.k8s.io/v1',
  'client.authentication.k8s.io/v1beta1',
] as const;
export type ExecApiVersion = (typeof EXEC_API_VERSIONS)[number];

/** The keys cpsync writes into the extension (see normalize.ts); unknown keys are ignored. */
const extension = z.looseObject({
  provider: z.enum(['eks', 'gke', 'aks']).optional(),
  clusterName: z.string().optional(),
  cluster: z.string().optional(),
  clusterId: z.string().optional(),
  region: z.string().optional(),
  accountId: z.string().optional(),
  projectId: z.string().optional(),
  location: z.string().optional(),
  tenantId: z.string().optional(),
  subscriptionId: z.string().optional(),
});
export type ExtensionKeys = z.infer<typeof extension>;

const execInfo = z.looseObject({
  apiVersion: z.enum(EXEC_API_VERSIONS),
  kind: z.literal('ExecCredential'),
  spec: z
    .looseObject({
      // client-go always gives the server with the cluster: a token is only sent where it was checked to go.
      cluster: z
        .looseObject({
          server: z.string({
            message: 'missing: the server the token is sent to is always given with the cluster',
          }),
          config: z.unknown().optional(),
        })
        .optional(),
    })
    .optional(),
});

export class TargetError extends Error {
  override name = 'TargetError';
}

export interface ExecInfo {
  apiVersion: ExecApiVersion;
  /** The profile's exec extension, when the consumer set provideClusterInfo: true. */
  extension?: ExtensionKeys;
  /** The server client-go will send the token to, when the consumer set provideClusterInfo: true. */
  server?: string;
}

/** Reads KUBERNETES_EXEC_INFO; undefined when client-go did not set it (the plugin run by hand). */
export function readExecInfo(text: string | undefined): ExecInfo | undefined {
  if (text === undefined || text.trim() === '') return undefined;
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new TargetError('KUBERNETES_EXEC_INFO is not JSON');
  }
  const parsed = execInfo.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new TargetError(`KUBERNETES_EXEC_INFO: ${issue.path.join('.') || '(root)'}: ${issue.message}`);
  }
  const config = parsed.data.spec?.cluster?.config;
  const server = parsed.data.spec?.cluster?.server;
  const base = { apiVersion: parsed.data.apiVersion, ...(server === undefined ? {} : { server }) };
  if (config === undefined || config === null) return base;
  const keys = extension.safeParse(config);
  if (!keys.success) {
    const issue = keys.error.issues[0]!;
    throw new TargetError(
      `the profile's exec extension: ${issue.path.join('.') || '(root)'}: ${issue.message}`,
    );
  }
  return { ...base, extension: keys.data };
}

/**
 * The domains AKS's API servers are under, public and private clusters alike: Azure's, and its sovereign clouds'
 * (Azure Government's AKS zone, not all of `azure.us`, where other services' hosts are named by their customers).
 */
const AKS_DOMAINS = ['.azmk8s.io', '.cx.prod.service.azk8s.cn', '.cx.aks.containerservice.azure.us'];

/**
 * Why `server` (where client-go will send the token) is not one a cluster of `target` is reached at, or undefined
 * when it is. Whoever wrote the profile or kubeconfig chose the server, and a token sent elsewhere can be replayed
 * against the cluster it is for: never a loopback, link-local or metadata address, nor anything cpsync would not
 * write for a cloud's endpoint (`canonicalServer`); an EKS token only to an EKS endpoint of the target's region, an
 * AKS token only under AKS's domains. GKE's endpoints are addresses, bound to no cluster by their form.
 * `localClouds`: clouds whose clusters run on this machine (local emulators), also reached at loopback addresses;
 * they add those and nothing else.
 */
export function serverProblem(
  server: string,
  target: Target,
  localClouds: readonly string[] = [],
): string | undefined {
  const local = localClouds.includes(target.provider);
  const canonical = canonicalServer(server, { loopback: local });
  const refused = `the server ${JSON.stringify(server)} is not`;
  if (canonical === undefined)
    return `${refused} one a cluster is reached at (an https URL of a host that is no loopback, link-local or metadata address): no token is sent there`;
  // A local cloud's clusters are also reached at loopback addresses; any other server is judged as any cloud's.
  if (local && canonicalServer(server) === undefined) return undefined;
  const host = new URL(canonical).hostname.toLowerCase();
  if (target.provider === 'eks') {
    const domain = `.${target.region}.eks.${awsPartitionOf(target.region).dnsSuffix}`;
    if (!host.endsWith(domain))
      return `${refused} an EKS endpoint in ${target.region} (a host under ${domain.slice(1)}): no token for ${JSON.stringify(target.cluster)} is sent there`;
  }
  if (target.provider === 'aks' && !AKS_DOMAINS.some((domain) => host.endsWith(domain)))
    return `${refused} an AKS endpoint (a host under ${AKS_DOMAINS.map((d) => d.slice(1)).join(', ')}): no token is sent there`;
  return undefined;
}

/** What the flags say about the cluster (each one optional; they win over the extension). */
export interface TargetFlags {
  provider?: 'eks' | 'gke' | 'aks';
  clusterName?: string;
  region?: string;
  account?: string;
  project?: string;
  location?: string;
  subscription?: string;
  tenantId?: string;
}

const NO_CLUSTER_INFO =
  "no cluster information: set provideClusterInfo: true in the consumer's exec configuration (client-go then passes the profile's extension in KUBERNETES_EXEC_INFO), or give --provider and the cluster flags";

/** The target from the extension and the flags; says which key is missing when one is. */
export function resolveTarget(extension: ExtensionKeys | undefined, flags: TargetFlags): Target {
  const e = extension ?? {};
  const provider = flags.provider ?? e.provider;
  if (!provider) throw new TargetError(NO_CLUSTER_INFO);
  switch (provider) {
    case 'eks': {
      const cluster = flags.clusterName ?? e.clusterId ?? e.cluster;
      const region = flags.region ?? e.region;
      if (!cluster)
        throw new TargetError(`the cluster name is missing (--cluster-name, or clusterId in the extension)`);
      if (!region) throw new TargetError(`the region is missing (--region, or region in the extension)`);
      // The region goes into the STS host name and the account into a role ARN: only their real shapes.
      if (!AWS_REGION.test(region))
        throw new TargetError(`the region ${JSON.stringify(region)} is not an AWS region (like eu-west-1)`);
      const accountId = flags.account ?? e.accountId;
      if (accountId !== undefined && !/^\d{12}$/.test(accountId))
        throw new TargetError(
          `the account ${JSON.stringify(accountId)} is not an AWS account id (12 digits)`,
        );
      return { provider, cluster, region, ...(accountId ? { accountId } : {}) };
    }
    case 'gke': {
      const cluster = flags.clusterName ?? e.cluster;
      const projectId = flags.project ?? e.projectId;
      const location = flags.location ?? e.location;
      return {
        provider,
        ...(cluster ? { cluster } : {}),
        ...(projectId ? { projectId } : {}),
        ...(location ? { location } : {}),
      };
    }
    case 'aks': {
      const cluster = flags.clusterName ?? e.cluster;
      const tenantId = flags.tenantId ?? e.tenantId;
      const subscriptionId = flags.subscription ?? e.subscriptionId;
      return {
        provider,
        ...(cluster ? { cluster } : {}),
        ...(tenantId ? { tenantId } : {}),
        ...(subscriptionId ? { subscriptionId } : {}),
      };
    }
  }
}

/** The target a profile's exec extension names (what the member probe reaches a cluster with). */
export function targetOfExtension(config: unknown): Target {
  const keys = extension.safeParse(config ?? {});
  if (!keys.success) {
    const issue = keys.error.issues[0]!;
    throw new TargetError(
      `the profile's exec extension: ${issue.path.join('.') || '(root)'}: ${issue.message}`,
    );
  }
  return resolveTarget(keys.data, {});
}
