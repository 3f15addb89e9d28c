/** The chat notifier's parts fed the contract's golden events, parsed as the handler parses them. */
import { SCHEMA_VERSION } from '../../../../../events/detailTypes.ts';
import { parseCpsyncEvent, type CpsyncEventBridgeEvent } from '../../../../../events/index.ts';
import { releaseFiles } from '../../../../contract/golden.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- golden events edited as JSON
type Golden = Record<string, any>;

const golden = releaseFiles(SCHEMA_VERSION, 'golden') as Record<string, Golden>;

/** A copy of the golden event `name`, to edit. */
export const goldenEvent = (name: string): Golden => structuredClone(golden[name]!);

/** `event` as the notifier reads it (the subscriber kit's parser). */
export const parsed = (event: Golden): CpsyncEventBridgeEvent => parseCpsyncEvent(JSON.stringify(event));
