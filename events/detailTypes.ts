/** The detail-types cpsync publishes (SPEC §4). */
export const DetailType = {
  Created: 'ClusterProfile Created',
  Updated: 'ClusterProfile Updated',
  Deleted: 'ClusterProfile Deleted',
  ScopeSynced: 'Inventory Scope Synced',
  ScopeOrphaned: 'Inventory Scope Orphaned',
  Announced: 'ClusterProfile Announced',
  AccessGranted: 'Consumer Access Granted',
  AccessRevoked: 'Consumer Access Revoked',
} as const;
export type DetailType = (typeof DetailType)[keyof typeof DetailType];

export const DEFAULT_SOURCE = 'cpsync';
/** `major.minor` of the event contract; what may change within a major is in events/VERSIONING.md. */
export const SCHEMA_VERSION = '1.6';
/** The major version this code reads and writes: a detail of another major is refused. */
export const SCHEMA_MAJOR = 1;

/** PutEvents limit for one entry (and for all entries of one call together), in bytes. */
export const PUT_EVENTS_MAX_BYTES = 256 * 1024;
/** Size above which a change event leaves the profile out (and says so): well under the PutEvents limit. */
export const MAX_DETAIL_BYTES = 64 * 1024;
