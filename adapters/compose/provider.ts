/** What a cloud contributes to the composition: built from the configuration, loaded on demand. */
import type { Provider } from '../../core/domain/model/observedCluster.ts';
import type { Scope } from '../../core/domain/model/scope.ts';
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
}
