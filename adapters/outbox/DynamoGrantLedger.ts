/**
 * The grants ledger in a DynamoDB table the stack owns (the functions'): one item per cluster, keyed by the
 * cluster's canonical id (`cluster`), with its provider and account (`account`: `<provider>/<account>`) as the
 * key of the index a scope's records are found through (`byAccount`). No TTL: a record lives until cpsync has
 * taken back what it names.
 *
 * DynamoDB reads a global secondary index only eventually consistently: the index may still show a record as it
 * was before the last write to it (by the sync that held the cluster's lease just before), or one deleted since.
 * A sync that took such a record for the cluster's would write a record built from it over the one the last
 * holder wrote, and a grant that record named would be named by none (never taken back). So the index only says
 * which clusters have records; each record is then read from the table itself, consistently. A record the index
 * does not show yet is no record to the sync, as a record lost is: the cluster's profiles show the grants the last
 * holder made, so the sync scans the cluster for cpsync's grants (core/sync/grants.ts) and records what it finds.
 * Never a record older than the table's. A reader that must not miss a record just written (a GKE project's role
 * settled beside other clusters' grants) names the clusters it knows of, and those are read by key as well.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DeleteCommand, DynamoDBDocumentClient, paginateQuery, PutCommand } from '@aws-sdk/lib-dynamodb';
import {
  isGrantRecord,
  keptForCluster,
  keptUnderOwnKey,
  ledgerKey,
  legacyLedgerKeys,
  ofScope,
  oneRecordPerCluster,
  type GrantRecord,
} from '../../core/domain/grants.ts';
import { ALL_REGIONS, type Scope } from '../../core/domain/model/scope.ts';
import { providerIdInScope } from '../../core/domain/scopes.ts';
import type { GrantLedger } from '../../core/sync/ports.ts';
import { SigV4Sha256, withoutSdkLogger } from '../shared/awsSdk.ts';
import { readConsistently } from '../shared/dynamoBatches.ts';
import { parsedJson } from '../../core/domain/json.ts';

/** The index of the table by provider and account. */
const LEDGER_ACCOUNT_INDEX = 'byAccount';

export interface DynamoGrantLedgerOptions {
  tableName: string;
  /** @default a client for the function's region */
  client?: DynamoDBClient;
  endpoint?: string;
  region?: string;
}

/** A document client for a table of cpsync's own: the one given, else one for the endpoint and region. */
export function documentClient(
  options: Pick<DynamoGrantLedgerOptions, 'client' | 'endpoint' | 'region'>,
): DynamoDBDocumentClient {
  return DynamoDBDocumentClient.from(
    options.client ??
      withoutSdkLogger(
        new DynamoDBClient({
          sha256: SigV4Sha256,
          ...(options.endpoint ? { endpoint: options.endpoint } : {}),
          ...(options.region ? { region: options.region } : {}),
        }),
      ),
  );
}

const accountKey = (scope: Pick<Scope, 'provider' | 'account'>) => `${scope.provider}/${scope.account}`;

export class DynamoGrantLedger implements GrantLedger {
  readonly #table: string;
  readonly #documents: DynamoDBDocumentClient;

  constructor(options: DynamoGrantLedgerOptions) {
    this.#table = options.tableName;
    this.#documents = documentClient(options);
  }

  async read(
    scope: Pick<Scope, 'provider' | 'account'>,
    also: readonly string[] = [],
  ): Promise<GrantRecord[]> {
    const clusters: string[] = [];
    for await (const page of paginateQuery(
      { client: this.#documents },
      {
        TableName: this.#table,
        IndexName: LEDGER_ACCOUNT_INDEX,
        KeyConditionExpression: 'account = :account',
        ExpressionAttributeValues: { ':account': accountKey(scope) },
        // `cluster` is one of DynamoDB's reserved words.
        ProjectionExpression: '#cluster',
        ExpressionAttributeNames: { '#cluster': 'cluster' },
      },
    ))
      for (const item of page.Items ?? [])
        // Only ids of the account's clusters: the index holds what any item says of itself.
        if (
          typeof item.cluster === 'string' &&
          providerIdInScope(item.cluster, { ...scope, region: ALL_REGIONS })
        )
          clusters.push(item.cluster);
    // The clusters asked for by key, the index showing them yet or not.
    const indexed = new Set(clusters);
    clusters.push(...new Set(also.filter((cluster) => !indexed.has(cluster))));
    const records = new Map<string, GrantRecord>();
    for (const item of await this.#consistently(clusters)) {
      // Only a record of this account kept under its own key (or one an earlier version used): an item put under
      // another key, or indexed under another account, names no cluster's grants here, whatever it says.
      const record = typeof item.record === 'string' ? parsedJson(item.record) : undefined;
      if (
        typeof item.cluster === 'string' &&
        isGrantRecord(record) &&
        ofScope(record, scope) &&
        keptUnderOwnKey(record, item.cluster)
      )
        records.set(item.cluster, record);
    }
    // In the index's order (a deleted record left out).
    return oneRecordPerCluster(
      clusters.flatMap((cluster) => {
        const record = records.get(cluster);
        return record ? [{ record, keptToday: cluster === ledgerKey(record) }] : [];
      }),
    );
  }

  /** The table's items of `clusters`, read consistently. */
  #consistently(clusters: readonly string[]): Promise<Array<Record<string, unknown>>> {
    return readConsistently(
      this.#documents,
      this.#table,
      clusters.map((cluster) => ({ cluster })),
      "reading the grants ledger's records",
    );
  }

  async write(
    records: readonly GrantRecord[],
    removed: ReadonlyArray<Pick<GrantRecord, 'provider' | 'providerId'>> = [],
  ): Promise<void> {
    const remove = (cluster: string) =>
      this.#documents.send(new DeleteCommand({ TableName: this.#table, Key: { cluster } }));
    for (const record of records) {
      await this.#documents.send(
        new PutCommand({
          TableName: this.#table,
          Item: { cluster: ledgerKey(record), account: accountKey(record), record: JSON.stringify(record) },
        }),
      );
      // Written under today's key: what an earlier version kept under another goes.
      await this.#removeEarlier(record);
    }
    for (const record of removed) {
      await remove(ledgerKey(record));
      await this.#removeEarlier(record);
    }
  }

  /**
   * What an earlier version kept of `record`'s cluster under another key, removed: only a record of that very
   * cluster, and only as it was read (the key may be another cluster's today, see `keptForCluster`).
   */
  async #removeEarlier(record: Pick<GrantRecord, 'provider' | 'providerId'>): Promise<void> {
    const keys = legacyLedgerKeys(record);
    if (keys.length === 0) return;
    for (const item of await this.#consistently(keys)) {
      if (typeof item.cluster !== 'string' || typeof item.record !== 'string') continue;
      if (!keptForCluster(parsedJson(item.record), record)) continue;
      try {
        await this.#documents.send(
          new DeleteCommand({
            TableName: this.#table,
            Key: { cluster: item.cluster },
            ConditionExpression: '#record = :read',
            ExpressionAttributeNames: { '#record': 'record' },
            ExpressionAttributeValues: { ':read': item.record },
          }),
        );
      } catch (error) {
        // Written again since it was read: whoever wrote it keeps it.
        if ((error as { name?: string }).name !== 'ConditionalCheckFailedException') throw error;
      }
    }
  }
}
