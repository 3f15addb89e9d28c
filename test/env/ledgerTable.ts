/**
 * The grants ledger's DynamoDB table as the stack makes it (infra/Cpsync.ts: partition key `cluster`, the
 * `byAccount` index by provider and account), and its index made to lag at a proxy before the AWS server, as
 * DynamoDB's index, read only eventually consistently, may.
 */
import { CreateTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoGrantLedger } from '../../adapters/outbox/DynamoGrantLedger.ts';
import { HUB_CREDENTIALS } from '../support/aws.ts';
import type { AwsProxy } from './awsProxy.ts';

let tables = 0;

/** Creates the ledger table `TableName` through `client`. */
export async function createLedgerTable(client: DynamoDBClient, TableName: string): Promise<void> {
  await client.send(
    new CreateTableCommand({
      TableName,
      BillingMode: 'PAY_PER_REQUEST',
      AttributeDefinitions: [
        { AttributeName: 'cluster', AttributeType: 'S' },
        { AttributeName: 'account', AttributeType: 'S' },
      ],
      KeySchema: [{ AttributeName: 'cluster', KeyType: 'HASH' }],
      GlobalSecondaryIndexes: [
        {
          IndexName: 'byAccount',
          KeySchema: [{ AttributeName: 'account', KeyType: 'HASH' }],
          Projection: { ProjectionType: 'ALL' },
        },
      ],
    }),
  );
}

/** A new ledger table at `endpoint` (moto, or a proxy before it), the ledger on it, and the table's own client. */
export async function dynamoLedgerTable(
  endpoint: string,
): Promise<{ ledger: DynamoGrantLedger; table: string; client: DynamoDBClient }> {
  const table = `cpsync-grants-${process.pid}-${++tables}`;
  const client = new DynamoDBClient({ endpoint, region: 'us-east-1', credentials: HUB_CREDENTIALS });
  await createLedgerTable(client, table);
  return { ledger: new DynamoGrantLedger({ tableName: table, client }), table, client };
}

/** A new ledger table at `endpoint` (moto, or a proxy before it), and the ledger on it. */
export async function dynamoLedgerAt(endpoint: string): Promise<DynamoGrantLedger> {
  return (await dynamoLedgerTable(endpoint)).ledger;
}

/** Whether an AWS call through the proxy is a query of the index `name` (the ledger's account index by default). */
const isIndexQuery = (call: { operation: string; body: string }, name: string): boolean =>
  call.operation.endsWith('.Query') && call.body.includes(`"IndexName":"${name}"`);

export interface LaggingIndex {
  /** From now on, the index answers as it does now (`read`: a read of the ledger through the proxy), and no later. */
  stopAt(read: () => Promise<unknown>): Promise<void>;
  /** The index answers as the table is again. */
  catchUp(): void;
}

/** The index `name` (the ledger's, by default) of every table behind `proxy`, made to lag when told. */
export function laggingIndex(proxy: AwsProxy, name = 'byAccount'): LaggingIndex {
  /** The index's answer given instead of the server's while it lags; none: the server's own. */
  let lagging: string | undefined;
  let caught: string | undefined;
  let catching = false;
  proxy.intercept(async (call, forward) => {
    if (!isIndexQuery(call, name)) return undefined;
    if (lagging !== undefined) return { status: 200, body: lagging };
    if (!catching) return undefined;
    const answer = await forward(call.body);
    caught = answer.body;
    return { status: answer.status, body: answer.body };
  });
  return {
    async stopAt(read) {
      catching = true;
      try {
        await read();
      } finally {
        catching = false;
      }
      if (caught === undefined) throw new Error(`the read did not query the index ${name}`);
      lagging = caught;
      caught = undefined;
    },
    catchUp() {
      lagging = undefined;
    },
  };
}
