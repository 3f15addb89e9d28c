/**
 * The sources' remembered answers in a DynamoDB table the stack owns (the functions'): one item per cluster,
 * keyed by its provider and canonical id (`cluster`), read per scope through the index `byScope` (partition key
 * `scope`: `<provider>/<account>`, sort key `region`). An item is put only when the table holds no later answer
 * for its cluster (a condition on `askedAt`), so a listing's older read never replaces an event's newer one.
 * Only cpsync's functions may write it (the stack grants Put/Delete to them alone).
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DeleteCommand, type DynamoDBDocumentClient, paginateQuery, PutCommand } from '@aws-sdk/lib-dynamodb';
import pLimit from 'p-limit';
import { ALL_REGIONS, type Scope } from '../../core/domain/model/scope.ts';
import type { AnswerStore, RememberedAnswer } from '../../core/sync/ports.ts';
import { documentClient } from './DynamoGrantLedger.ts';
import { canonicalProviderId } from '../../core/domain/naming.ts';
import { isRememberedAnswer } from './FileAnswerStore.ts';

/** The index of the table by provider and account, sorted by region. */
const ANSWERS_SCOPE_INDEX = 'byScope';

export interface DynamoAnswerStoreOptions {
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
const clusterKey = (record: Pick<RememberedAnswer, 'provider' | 'providerId'>) =>
  `${record.provider}/${canonicalProviderId(record)}`;

export class DynamoAnswerStore implements AnswerStore {
  readonly #table: string;
  readonly #documents: DynamoDBDocumentClient;

  constructor(options: DynamoAnswerStoreOptions) {
    this.#table = options.tableName;
    this.#documents = documentClient(options);
  }

  async read(scope: Scope): Promise<RememberedAnswer[]> {
    const records: RememberedAnswer[] = [];
    /** Items earlier versions keyed by a lower-cased EKS id: never read again, so removed here. */
    const misfiled: string[] = [];
    const oneRegion = scope.region !== ALL_REGIONS;
    for await (const page of paginateQuery(
      { client: this.#documents },
      {
        TableName: this.#table,
        IndexName: ANSWERS_SCOPE_INDEX,
        KeyConditionExpression: oneRegion ? '#scope = :scope AND #region = :region' : '#scope = :scope',
        ExpressionAttributeNames: { '#scope': 'scope', ...(oneRegion ? { '#region': 'region' } : {}) },
        ExpressionAttributeValues: {
          ':scope': scopeKey(scope),
          ...(oneRegion ? { ':region': scope.region } : {}),
        },
      },
    ))
      for (const item of page.Items ?? []) {
        let record: unknown;
        try {
          record = typeof item.record === 'string' ? JSON.parse(item.record) : undefined;
        } catch {
          record = undefined;
        }
        // An item that is not a record is no record: the cloud is asked. Nor is one under another key than its
        // cluster's (an EKS id lower-cased by earlier versions, which two clusters named alike but for case shared).
        if (
          isRememberedAnswer(record) &&
          record.provider === scope.provider &&
          record.account === scope.account
        ) {
          if (item.cluster === clusterKey(record)) records.push(record);
          else if (typeof item.cluster === 'string') misfiled.push(item.cluster);
        }
      }
    // Best effort: one left is asked about again at the next read, and stands for nothing meanwhile.
    await Promise.all(
      misfiled.map((cluster) =>
        this.#documents
          .send(new DeleteCommand({ TableName: this.#table, Key: { cluster } }))
          .catch(() => undefined),
      ),
    );
    return records;
  }

  async write(
    records: readonly RememberedAnswer[],
    removed: ReadonlyArray<Pick<RememberedAnswer, 'provider' | 'providerId'>> = [],
  ): Promise<void> {
    // A first sync writes every cluster's answer: a few at a time.
    const limit = pLimit(WRITES_IN_FLIGHT);
    await Promise.all([
      ...records.map((record) =>
        limit(async () => {
          try {
            await this.#documents.send(
              new PutCommand({
                TableName: this.#table,
                Item: {
                  cluster: clusterKey(record),
                  scope: scopeKey(record),
                  region: record.region,
                  askedAt: record.askedAt,
                  record: JSON.stringify(record),
                },
                ConditionExpression: 'attribute_not_exists(askedAt) OR askedAt <= :askedAt',
                ExpressionAttributeValues: { ':askedAt': record.askedAt },
              }),
            );
          } catch (error) {
            // The table holds a later answer for the cluster: it stays.
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
