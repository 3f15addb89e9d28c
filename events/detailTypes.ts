/** The detail-types cpsync publishes (SPEC §4). */
export const DetailType = {
  Created: 'ClusterProfile Created',
  Updated: 'ClusterProfile Updated',
  Deleted: 'ClusterProfile Deleted',
  ScopeSynced: 'Inventory Scope Synced',
  ScopeOrphaned: 'Inventory Scope Orphaned',
} as const;
export type DetailType = (typeof DetailType)[keyof typeof DetailType];

export const DEFAULT_SOURCE = 'cpsync';
export const SCHEMA_VERSION = '1.1';

/** PutEvents limit for one entry (and for all entries of one call together), in bytes. */
export const PUT_EVENTS_MAX_BYTES = 256 * 1024;
/** Size above which a change event leaves the profile out (and says so): well under the PutEvents limit. */
export const MAX_DETAIL_BYTES = 64 * 1024;
