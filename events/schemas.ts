import announced from './schemas/clusterprofile-announced.json' with { type: 'json' };
import created from './schemas/clusterprofile-created.json' with { type: 'json' };
import deleted from './schemas/clusterprofile-deleted.json' with { type: 'json' };
import updated from './schemas/clusterprofile-updated.json' with { type: 'json' };
import scopeSynced from './schemas/inventory-scope-synced.json' with { type: 'json' };
import scopeOrphaned from './schemas/inventory-scope-orphaned.json' with { type: 'json' };
import accessGranted from './schemas/consumer-access-granted.json' with { type: 'json' };
import accessRevoked from './schemas/consumer-access-revoked.json' with { type: 'json' };
import { DetailType } from './detailTypes.ts';

/** The JSON Schema (draft-04, as the EventBridge schema registry takes it) of each detail-type's detail. */
export const DETAIL_SCHEMAS: Readonly<Record<DetailType, object>> = {
  [DetailType.Created]: created,
  [DetailType.Updated]: updated,
  [DetailType.Deleted]: deleted,
  [DetailType.ScopeSynced]: scopeSynced,
  [DetailType.ScopeOrphaned]: scopeOrphaned,
  [DetailType.Announced]: announced,
  [DetailType.AccessGranted]: accessGranted,
  [DetailType.AccessRevoked]: accessRevoked,
};
