/**
 * Scope identity. A scope names what one listing sees, and its labels select the profiles that listing
 * may delete, so two spellings of one scope must never be two scopes: every scope is made canonical
 * (one spelling per account and region) before it is listed, compared or selected by.
 */
import { CpsyncError } from './errors.ts';
import { PROVIDERS, type ObservedCluster, type Provider } from './model/observedCluster.ts';
import { ALL_REGIONS, type Scope } from './model/scope.ts';
import { foldCase } from './naming.ts';

/** A scope that names no real account or region of its provider; `field` says which part is wrong. */
export class InvalidScopeError extends CpsyncError {
  readonly field: 'provider' | 'account' | 'region';
  constructor(field: 'provider' | 'account' | 'region', detail: string) {
    super(detail);
    this.field = field;
  }
}

const AWS_ACCOUNT = /^\d{12}$/;
/**
 * An AWS region's name, in any partition: `eu-west-1`, `cn-north-1`, `us-gov-west-1`, `us-isob-east-1`,
 * `eusc-de-east-1`. The one pattern the configuration, scopes and the credential plugin accept.
 */
export const AWS_REGION = /^[a-z]{2,4}(-[a-z]+)+-\d{1,2}$/;
/** A project id, optionally domain-scoped (`example.com:my-project`). */
const GCP_PROJECT = /^(?:[a-z0-9][a-z0-9.-]*[a-z0-9]:)?[a-z][a-z0-9-]{4,28}[a-z0-9]$/;
const GCP_REGION = /^[a-z]+-[a-z]+\d+$/;
const GCP_ZONE = /^([a-z]+-[a-z]+\d+)-[a-z]$/;
const AZURE_SUBSCRIPTION = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const AZURE_LOCATION = /^[a-z0-9]+$/;

/** The account as each cloud spells it canonically: AWS ids as given, GCP project ids and Azure subscription ids in ASCII lower case. */
function canonicalAccount(provider: Provider, account: string): string {
  const trimmed = account.trim();
  return provider === 'eks' ? trimmed : foldCase(trimmed);
}

/**
 * The region as cpsync spells it: lower case, and for Azure without spaces (`West Europe` and
 * `WestEurope` are both `westeurope`, the name ARM lists clusters under).
 */
export function canonicalRegion(provider: Provider, region: string): string {
  const lower = foldCase(region.trim());
  return provider === 'aks' ? lower.replace(/\s+/g, '') : lower;
}

/** The region a GCP zone belongs to (`us-central1-a` → `us-central1`); anything else as it is. */
export function regionOfZone(location: string): string {
  return GCP_ZONE.exec(location)?.[1] ?? location;
}

/**
 * The one spelling of a scope, or InvalidScopeError naming what is wrong. A GKE scope is a project, or
 * a project and a region (which covers the region's zonal clusters too); a zone is refused, as
 * profiles are selected by region.
 */
export function canonicalScope(scope: { provider: string; account: string; region?: string }): Scope {
  const provider = scope.provider as Provider;
  if (!PROVIDERS.includes(provider))
    throw new InvalidScopeError(
      'provider',
      `provider must be one of ${PROVIDERS.join(', ')}, got ${JSON.stringify(scope.provider)}`,
    );
  const account = canonicalAccount(provider, scope.account ?? '');
  const given = scope.region === undefined || scope.region.trim() === '' ? ALL_REGIONS : scope.region;
  const region = given === ALL_REGIONS ? ALL_REGIONS : canonicalRegion(provider, given);
  const bad = (field: 'account' | 'region', expected: string) =>
    new InvalidScopeError(
      field,
      `${provider} ${field} ${JSON.stringify(field === 'account' ? scope.account : scope.region)} is not ${expected}`,
    );
  switch (provider) {
    case 'eks':
      if (!AWS_ACCOUNT.test(account)) throw bad('account', 'a 12-digit AWS account id');
      if (region !== ALL_REGIONS && !AWS_REGION.test(region))
        throw bad('region', 'an AWS region such as us-east-1');
      break;
    case 'gke':
      if (!GCP_PROJECT.test(account)) throw bad('account', 'a GCP project id');
      if (region !== ALL_REGIONS && GCP_ZONE.test(region))
        throw new InvalidScopeError(
          'region',
          `gke region ${JSON.stringify(scope.region)} is a zone: a GKE scope is a project or a project and a region (${regionOfZone(region)} covers the clusters of its zones too)`,
        );
      if (region !== ALL_REGIONS && !GCP_REGION.test(region))
        throw bad('region', 'a GCP region such as europe-west1');
      break;
    case 'aks':
      if (!AZURE_SUBSCRIPTION.test(account)) throw bad('account', 'an Azure subscription id (a GUID)');
      if (region !== ALL_REGIONS && !AZURE_LOCATION.test(region))
        throw bad('region', 'an Azure location such as westeurope');
      break;
  }
  return { provider, account, region };
}

/**
 * Whether a listed cluster belongs to a scope: the same provider, account and (unless the scope is
 * account-wide) region, compared canonically. What a scope lists must lie within what its labels
 * select, and the other way round; a cluster outside is never planned against the scope.
 */
export function clusterInScope(
  cluster: Pick<ObservedCluster, 'provider' | 'account' | 'region'>,
  scope: Scope,
): boolean {
  return (
    cluster.provider === scope.provider &&
    canonicalAccount(scope.provider, cluster.account) === scope.account &&
    (scope.region === ALL_REGIONS || canonicalRegion(scope.provider, cluster.region) === scope.region)
  );
}

/** An EKS cluster's ARN (its provider id): its partition, region, account and name. */
export const EKS_CLUSTER_ARN = /^arn:(aws[a-z-]*):eks:([^:]+):(\d{12}):cluster\/(.+)$/;
/**
 * A GKE cluster's selfLink: its project and location (`…/projects/<p>/locations/<l>/clusters/<n>`, or `zones/`). GKE
 * spells projects and locations in lower case: an id spelled otherwise is no cluster of GKE's.
 */
const GKE_SELF_LINK = /\/projects\/([a-z0-9.:-]+)\/(?:locations|zones)\/([a-z0-9-]+)\/clusters\/[^/]+$/;
/** An AKS managed cluster's resource id, ASCII letters lower-cased as ARM compares them: its subscription. */
const AKS_RESOURCE_ID =
  /^\/subscriptions\/([^/]+)\/resourcegroups\/[^/]+\/providers\/microsoft\.containerservice\/managedclusters\/[^/]+$/;

/**
 * Where a provider id says its cluster is: the account (AWS account, GCP project, Azure subscription) and, where
 * the id names one, the region (an AKS id names none). Undefined when it is no cluster id of `provider`'s.
 */
export function placeOfProviderId(
  provider: Provider,
  providerId: string,
): { account: string; region?: string } | undefined {
  switch (provider) {
    case 'eks': {
      const match = EKS_CLUSTER_ARN.exec(providerId);
      return match ? { account: match[3]!, region: match[2]! } : undefined;
    }
    case 'gke': {
      const match = GKE_SELF_LINK.exec(providerId);
      return match ? { account: match[1]!, region: regionOfZone(match[2]!) } : undefined;
    }
    case 'aks': {
      const match = AKS_RESOURCE_ID.exec(foldCase(providerId));
      return match ? { account: match[1]! } : undefined;
    }
  }
}

/**
 * Whether a complete listing of `scope` says that the cluster of `providerId` is gone when it does not show it: the
 * id places the cluster in the scope's account and, for a scope of one region, in that region. An AKS id names no
 * region, so a listing of one Azure location speaks for no absent AKS cluster (what would place it there is the
 * profile's region label, which any hub writer may change): the subscription's listings do.
 */
export function listingSpeaksFor(providerId: string, scope: Scope): boolean {
  return (
    providerIdInScope(providerId, scope) &&
    (scope.region === ALL_REGIONS || placeOfProviderId(scope.provider, providerId)?.region !== undefined)
  );
}

/**
 * Whether a profile's provider id is of a cluster of `scope`: its account and (where the id names one) region,
 * compared as the cloud spells them. A scope's labels are label values — cut to 63 characters and with other
 * characters made `-` (`labelValue`) — so two scopes' labels can be one (two long domain-scoped GCP projects that
 * differ past the cut); only the id tells whose a profile is. An AKS id names no region: the region label
 * (an Azure location, a valid label value as it is) tells it.
 */
export function providerIdInScope(providerId: string, scope: Scope): boolean {
  const place = placeOfProviderId(scope.provider, providerId);
  return (
    place !== undefined &&
    clusterInScope(
      { provider: scope.provider, account: place.account, region: place.region ?? scope.region },
      scope,
    )
  );
}
