/**
 * The grants ledger, where only cpsync writes what it granted: the file ledger in the state directory (the
 * CLI's) and the DynamoDB ledger in moto with the table as the stack makes it (partition key `cluster`, the
 * `byAccount` index). Each keeps one record per cluster, reads an account's records (every region, no other
 * account's), takes an Azure id in any case as one cluster, and removes what it is told to.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { CreateTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { GrantRecord } from '../../../../core/domain/grants.ts';
import type { GrantLedger } from '../../../../core/sync/ports.ts';
import { DynamoGrantLedger } from '../../../../adapters/outbox/DynamoGrantLedger.ts';
import { FileGrantLedger } from '../../../../adapters/outbox/FileGrantLedger.ts';
import { startMoto, type MotoServer } from '../../../env/moto.ts';
import { HUB_CREDENTIALS } from '../../../support/aws.ts';
import { temporaryDirectory } from '../../../support/tmp.ts';

const eks = (region: string, name: string, account = '111122223333'): GrantRecord => ({
  providerId: `arn:aws:eks:${region}:${account}:cluster/${name}`,
  provider: 'eks',
  account,
  region,
  grants: [{ consumer: 'argocd', identity: 'arn:aws:iam::111122223333:role/argocd', level: 'edit' }],
});
const aks = (id: string): GrantRecord => ({
  providerId: id,
  provider: 'aks',
  account: '00000000-1111-2222-3333-444444444444',
  region: 'westeurope',
  grants: [
    { consumer: 'argocd', identity: '5d1c0e2a-7b3f-4c6d-9e8a-0f1b2c3d4e5f', level: 'view', pending: true },
  ],
});
const AKS_ID =
  '/subscriptions/00000000-1111-2222-3333-444444444444/resourceGroups/rg-web/providers/Microsoft.ContainerService/managedClusters/web';

/** The contract both ledgers keep. */
function behaves(name: string, make: () => Promise<GrantLedger>) {
  it(`${name}: keeps one record per cluster, reads an account's records in every region and no other account's`, async () => {
    const ledger = await make();
    const east = eks('us-east-1', 'payments');
    const west = eks('eu-west-1', 'payments');
    const other = eks('us-east-1', 'payments', '999999999999');
    await ledger.write([east, west, other]);
    const read = (account: string) => ledger.read({ provider: 'eks', account });
    assert.deepEqual(
      (await read('111122223333')).map((r) => r.providerId).sort(),
      [west.providerId, east.providerId].sort(),
    );
    assert.deepEqual(await read('999999999999'), [other]);
    assert.deepEqual(await ledger.read({ provider: 'gke', account: '111122223333' }), []);
    // A record written again replaces the cluster's; one removed is gone.
    const changed = { ...east, grants: [], swept: true as const };
    await ledger.write([changed], [west]);
    assert.deepEqual(await read('111122223333'), [changed]);
  });

  it(`${name}: takes an Azure id in another case as the same cluster`, async () => {
    const ledger = await make();
    await ledger.write([aks(AKS_ID)]);
    await ledger.write([
      aks(AKS_ID.toUpperCase().replace('/SUBSCRIPTIONS/00000000', '/subscriptions/00000000')),
    ]);
    const records = await ledger.read({ provider: 'aks', account: '00000000-1111-2222-3333-444444444444' });
    assert.equal(records.length, 1);
    await ledger.write([], [aks(AKS_ID.toLowerCase())]);
    assert.deepEqual(
      await ledger.read({ provider: 'aks', account: '00000000-1111-2222-3333-444444444444' }),
      [],
    );
  });
}

describe('the grants ledger', () => {
  let moto: MotoServer;
  let tables = 0;

  before(async () => {
    moto = await startMoto();
  });
  after(async () => moto?.stop());

  behaves('in files', async () => new FileGrantLedger(temporaryDirectory('cpsync-ledger-')));

  behaves('in DynamoDB', async () => {
    const TableName = `cpsync-grants-${++tables}`;
    const client = new DynamoDBClient({
      endpoint: moto.endpoint,
      region: 'us-east-1',
      credentials: HUB_CREDENTIALS,
    });
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
    return new DynamoGrantLedger({ tableName: TableName, client });
  });

  it('in files: moves a record it cannot read aside, names it, and reads the others', async () => {
    const directory = temporaryDirectory('cpsync-ledger-');
    const ledger = new FileGrantLedger(directory);
    await ledger.write([eks('us-east-1', 'payments'), eks('us-east-1', 'checkout')]);
    const folder = readdirSync(join(directory, 'grants'))[0]!;
    const [broken] = readdirSync(join(directory, 'grants', folder));
    writeFileSync(join(directory, 'grants', folder, broken!), '{"providerId": "arn:aws:eks');
    const records = await ledger.read({ provider: 'eks', account: '111122223333' });
    assert.equal(records.length, 1);
    assert.equal(ledger.quarantined().length, 1);
    assert.ok(existsSync(ledger.quarantined()[0]!.path));
    assert.match(readFileSync(ledger.quarantined()[0]!.path, 'utf8'), /arn:aws:eks/, 'nothing lost');
  });
});
