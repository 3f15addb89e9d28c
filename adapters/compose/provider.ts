/** What a cloud contributes to the composition: built from the configuration, loaded on demand. */
import type { Provider } from '../../core/domain/model/observedCluster.ts';
import { ALL_REGIONS, type Scope } from '../../core/domain/model/scope.ts';
import type { ClusterRef, ClusterSource } from '../../core/sync/ports.ts';
import type { CpsyncConfig } from './config.ts';
import type { Target } from '../credentials/target.ts';
import type { ClusterToken } from '../credentials/tokens.ts';
import type { AzureRoleGrants, GoogleProjectRoles, ProviderGrants } from '../grants/CloudGrants.ts';

/** A configured cloud: its source, and the scopes the configuration gives it. */
export interface ProviderInstance {
  source: ClusterSource;
  /**
   * Every scope of the provider the configuration covers; with `accounts`, only those of these
   * accounts (canonical ids) that the configuration covers.
   */
  scopes(accounts?: readonly string[]): Promise<Scope[]>;
  /**
   * `scopes(accounts)` costs what `scopes()` does (it enumerates every account and keeps those asked for: a project
   * search, every subscription): an account's coverage is then read from the whole discovery, made once for its time
   * (`DISCOVERY_TTL_MILLIS`) whatever ids are asked, so ids that no configuration covers cost no more calls.
   */
  discoversWhole?: boolean;
  /**
   * A token for one of the provider's clusters, from the provider's own credentials (the member probe, the
   * access grants).
   */
  memberToken?(target: Target): Promise<ClusterToken>;
  /** The cloud's own way of granting consumers access (EKS: access entries); others bind on the member. */
  accessEntries?(): Promise<ProviderGrants>;
  /** AKS: Azure role assignments, for clusters that use Azure RBAC for Kubernetes authorization. */
  roleAssignments?(): Promise<AzureRoleGrants>;
  /** GKE: the project-wide cloud role consumers need to authenticate. */
  projectRoles?(): Promise<GoogleProjectRoles>;
  close?(): Promise<void>;
}

/** How long what discovery found (accounts, regions, projects, subscriptions) is reused by a long-lived process. */
export const DISCOVERY_TTL_MILLIS = 10 * 60 * 1000;

/** How a cloud is built beyond its configuration. */
export interface BuildOptions {
  /**
   * Every remembered answer set aside: the cloud is asked for each per-cluster read, and what it says is
   * remembered (`cpsync sync --fresh`).
   */
  fresh?: boolean;
}

/** How one cloud is built from the configuration; loaded by the entry points that need it. */
export interface ProviderModule {
  provider: Provider;
  /** The provider's source and scopes, or undefined when the configuration does not have the provider. */
  build(config: CpsyncConfig, options?: BuildOptions): Promise<ProviderInstance | undefined>;
  /** As the source's `isProviderIdOf`, without loading the cloud's SDK. */
  isProviderIdOf(providerId: string, ref: ClusterRef): boolean;
  /**
   * The scopes the configuration lists outright (its accounts as a list, each of every region), read without the
   * cloud, its SDK or its credentials; undefined where they are discovered. A provider made on demand answers
   * `scopes()` from these, so a function that only enumerates listed scopes never reads the cloud's secret.
   */
  listedScopes?(config: CpsyncConfig): Scope[] | undefined;
}

/** The scopes of `accounts` as the configuration lists them, each of every region: one each, in order. */
export function scopesOfListed(provider: Provider, accounts: readonly string[]): Scope[] {
  return [...new Set(accounts)].sort().map((account) => ({ provider, account, region: ALL_REGIONS }));
}
