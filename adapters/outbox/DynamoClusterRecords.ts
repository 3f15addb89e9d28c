/**
 * Per-cluster records in a DynamoDB table the stack owns (the functions' remembered answers and missed listings):
 * one item per cluster, keyed by its provider and canonical id (`cluster`: `<provider>/<provider id>`), read per
 * scope through the index `byScope` (partition key `scope`: `<provider>/<account>`, sort key `region`). An item is
 * put only when the table holds no later record for its cluster (a condition on the kind's time attribute), so a
 * listing's older record never replaces an event's newer one. Only cpsync's functions may write it (the stack
 * grants Put/Delete to them alone, each for the clouds it reads).
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DeleteCommand, type DynamoDBDocumentClient, paginateQuery, PutCommand } from '@aws-sdk/lib-dynamodb';
import pLimit from 'p-limit';
import { ALL_REGIONS, type Scope } from '../../core/domain/model/scope.ts';
import { documentClient } from './DynamoGrantLedger.ts';
import { canonicalProviderId } from '../../core/domain/naming.ts';
import type { ClusterRecord, RecordKind } from './FileClusterRecords.ts';
import { readConsistently } from '../shared/dynamoBatches.ts';

/** The index of the table by provider and account, sorted by region. */
const SCOPE_INDEX = 'byScope';

export interface DynamoRecordsOptions {
  tableName: string;
  /** @default a client for the function's region */
  client?: DynamoDBClient;
  endpoint?: string;
  region?: string;
}

/** Puts and deletes in flight at once. */
const WRITES_IN_FLIGHT = 16;

const scopeKey = (scope: Pick<Scope, 'provider' | 'account'>) => `${scope.provider}/${scope.account}`;
/** An item's key: its cluster's provider id as the cloud compares it (Azure's in any case, EKS's exactly). */
const clusterKey = (record: Pick<ClusterRecord, 'provider' | 'providerId'>) =>
  `${record.provider}/${canonicalProviderId(record)}`;

export class DynamoClusterRecords<T extends ClusterRecord> {
  readonly #table: string;
  readonly #documents: DynamoDBDocumentClient;
  readonly #kind: RecordKind<T>;

  constructor(options: DynamoRecordsOptions, kind: RecordKind<T>) {
    this.#table = options.tableName;
    this.#documents = documentClient(options);
    this.#kind = kind;
  }

  /** The records of an account's clusters in `scope.region` (every region: `*`). Rejects when the table cannot be read. */
  async read(scope: Scope): Promise<T[]> {
    const records: T[] = [];
    /** Items kept under another key than their cluster's (an EKS id lower-cased by earlier versions): removed. */
    const misfiled: string[] = [];
    const oneRegion = scope.region !== ALL_REGIONS;
    const take = (item: Record<string, unknown>) => {
      let record: unknown;
      try {
        record = typeof item.record === 'string' ? JSON.parse(item.record) : undefined;
      } catch {
        record = undefined;
      }
      // An item that is not a record is no record. Nor is one under another key than its cluster's (an EKS id
      // lower-cased by earlier versions, which two clusters named alike but for case shared), nor one indexed
      // under another region than its own.
      if (
        this.#kind.is(record) &&
        record.provider === scope.provider &&
        record.account === scope.account &&
        item.region === record.region
      ) {
        if (item.cluster === clusterKey(record)) records.push(record);
        else if (typeof item.cluster === 'string') misfiled.push(item.cluster);
      }
    };
    const hits: Array<Record<string, unknown>> = [];
    for await (const page of paginateQuery(
      { client: this.#documents },
      {
        TableName: this.#table,
        IndexName: SCOPE_INDEX,
        KeyConditionExpression: oneRegion ? '#scope = :scope AND #region = :region' : '#scope = :scope',
        ExpressionAttributeNames: { '#scope': 'scope', ...(oneRegion ? { '#region': 'region' } : {}) },
        ExpressionAttributeValues: {
          ':scope': scopeKey(scope),
          ...(oneRegion ? { ':region': scope.region } : {}),
        },
      },
    ))
      hits.push(...(page.Items ?? []));
    if (!this.#kind.perAccount) for (const item of hits) take(item);
    else {
      // The index lags the table: each hit is read again from the table, and one the table no longer holds (a
      // record removed since) stands for nothing.
      const keys = [
        ...new Set(hits.flatMap((item) => (typeof item.cluster === 'string' ? [item.cluster] : []))),
      ];
      const items = await readConsistently(
        this.#documents,
        this.#table,
        keys.map((cluster) => ({ cluster })),
        `reading the ${this.#kind.folder} table`,
      );
      for (const item of items) take(item);
    }
    // Best effort: one left is met again at the next read, and stands for nothing meanwhile.
    await Promise.all(
      misfiled.map((cluster) =>
        this.#documents
          .send(new DeleteCommand({ TableName: this.#table, Key: { cluster } }))
          .catch(() => undefined),
      ),
    );
    return records;
  }

  /** Stores each record unless the table holds a later one of its cluster, and removes those `removed` names. */
  async write(
    records: readonly T[],
    removed: ReadonlyArray<Pick<ClusterRecord, 'provider' | 'providerId'>> = [],
  ): Promise<void> {
    // A first sync writes every cluster's record: a few at a time.
    const limit = pLimit(WRITES_IN_FLIGHT);
    const attribute = this.#kind.attribute;
    await Promise.all([
      ...records.map((record) =>
        limit(async () => {
          const at = this.#kind.at(record);
          try {
            await this.#documents.send(
              new PutCommand({
                TableName: this.#table,
                Item: {
                  cluster: clusterKey(record),
                  scope: scopeKey(record),
                  region: record.region,
                  [attribute]: at,
                  record: JSON.stringify(record),
                },
                ConditionExpression: 'attribute_not_exists(#at) OR #at <= :at',
                ExpressionAttributeNames: { '#at': attribute },
                ExpressionAttributeValues: { ':at': at },
              }),
            );
          } catch (error) {
            // The table holds a later record of the cluster: it stays.
            if ((error as { name?: string }).name !== 'ConditionalCheckFailedException') throw error;
          }
        }),
      ),
      ...removed.map((record) =>
        limit(() =>
          this.#documents.send(
            new DeleteCommand({ TableName: this.#table, Key: { cluster: clusterKey(record) } }),
          ),
        ),
      ),
    ]);
  }
}
