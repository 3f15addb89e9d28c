/**
 * The grants ledger in a DynamoDB table the stack owns (the functions'): one item per cluster, keyed by the
 * cluster's canonical id (`cluster`), with its provider and account (`account`: `<provider>/<account>`) as the
 * key of the index a scope's records are read through (`byAccount`). No TTL: a record lives until cpsync has
 * taken back what it names.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DeleteCommand, DynamoDBDocumentClient, paginateQuery, PutCommand } from '@aws-sdk/lib-dynamodb';
import { ledgerKey, type GrantRecord } from '../../core/domain/grants.ts';
import type { Scope } from '../../core/domain/model/scope.ts';
import type { GrantLedger } from '../../core/sync/ports.ts';

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
      new DynamoDBClient({
        ...(options.endpoint ? { endpoint: options.endpoint } : {}),
        ...(options.region ? { region: options.region } : {}),
      }),
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

  async read(scope: Pick<Scope, 'provider' | 'account'>): Promise<GrantRecord[]> {
    const records: GrantRecord[] = [];
    for await (const page of paginateQuery(
      { client: this.#documents },
      {
        TableName: this.#table,
        IndexName: LEDGER_ACCOUNT_INDEX,
        KeyConditionExpression: 'account = :account',
        ExpressionAttributeValues: { ':account': accountKey(scope) },
      },
    ))
      for (const item of page.Items ?? [])
        if (typeof item.record === 'string') records.push(JSON.parse(item.record) as GrantRecord);
    return records;
  }

  async write(
    records: readonly GrantRecord[],
    removed: ReadonlyArray<Pick<GrantRecord, 'provider' | 'providerId'>> = [],
  ): Promise<void> {
    for (const record of records)
      await this.#documents.send(
        new PutCommand({
          TableName: this.#table,
          Item: { cluster: ledgerKey(record), account: accountKey(record), record: JSON.stringify(record) },
        }),
      );
    for (const record of removed)
      await this.#documents.send(
        new DeleteCommand({ TableName: this.#table, Key: { cluster: ledgerKey(record) } }),
      );
  }
}
