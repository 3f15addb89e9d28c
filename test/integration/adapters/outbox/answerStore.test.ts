/**
 * The sources' remembered answers, where only cpsync writes: the file store in the state directory (the CLI's)
 * and the DynamoDB store in moto with the table as the stack makes it (partition key `cluster`, the `byScope`
 * index by scope and region). Each keeps one record per cluster, reads an account's records in one region or
 * every region (no other account's or cloud's), never replaces a later answer by an earlier one, takes an Azure id
 * in any case as one cluster, removes what it is told to, and reads what is not a record as no record.
 */
import assert from 'node:assert/strict';
import { readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { DynamoDBClient, PutItemCommand, ScanCommand } from '@aws-sdk/client-dynamodb';
import type { AnswerStore, RememberedAnswer } from '../../../../core/sync/ports.ts';
import { DynamoAnswerStore } from '../../../../adapters/outbox/DynamoAnswerStore.ts';
import { FileAnswerStore } from '../../../../adapters/outbox/FileAnswerStore.ts';
import { startMoto, type MotoServer } from '../../../env/moto.ts';
import { createClusterRecordsTable, HUB_CREDENTIALS } from '../../../support/aws.ts';
import { temporaryDirectory } from '../../../support/tmp.ts';

const ACCOUNT = '111122223333';
const SUB = '00000000-1111-2222-3333-444444444444';
const eks = (region: string, name: string, askedAt = 1_000, account = ACCOUNT): RememberedAnswer => ({
  provider: 'eks',
  account,
  region,
  providerId: `arn:aws:eks:${region}:${account}:cluster/${name}`,
  listed: 'digest-1',
  askedAt,
  answer: { nodegroups: [{ nodegroupName: 'general', status: 'ACTIVE' }] },
});
const AKS_ID = `/subscriptions/${SUB}/resourceGroups/rg-web/providers/Microsoft.ContainerService/managedClusters/web`;
const aks = (id: string, askedAt: number, ca: string): RememberedAnswer => ({
  provider: 'aks',
  account: SUB,
  region: 'westeurope',
  providerId: id,
  listed: 'digest-a',
  askedAt,
  answer: { certificateAuthorityData: ca },
});
const ids = (records: RememberedAnswer[]) => records.map((r) => r.providerId).sort();

/** The contract both stores keep; `junk` puts something that is not a record where `record`'s would be. */
function behaves(
  name: string,
  make: () => Promise<{ store: AnswerStore; junk: (record: RememberedAnswer) => Promise<void> }>,
) {
  it(`${name}: reads an account's records in one region or every region, and no other account's or cloud's`, async () => {
    const { store } = await make();
    const east = eks('us-east-1', 'payments');
    const west = eks('eu-west-1', 'payments');
    const other = eks('us-east-1', 'payments', 1_000, '999999999999');
    await store.write([east, west, other]);
    const read = (region: string, account = ACCOUNT) => store.read({ provider: 'eks', account, region });
    assert.deepEqual(ids(await read('*')), ids([east, west]));
    assert.deepEqual(await read('us-east-1'), [east]);
    assert.deepEqual(await read('us-east-1', '999999999999'), [other]);
    assert.deepEqual(await read('ap-south-1'), []);
    assert.deepEqual(await store.read({ provider: 'gke', account: ACCOUNT, region: '*' }), []);
    await store.write([], [west]);
    assert.deepEqual(await read('*'), [east]);
  });

  it(`${name}: never replaces a later answer by an earlier one, and takes an Azure id in any case as one cluster`, async () => {
    const { store } = await make();
    const scope = { provider: 'aks' as const, account: SUB, region: '*' };
    await store.write([aks(AKS_ID, 2_000, 'event')]);
    await store.write([aks(AKS_ID.toLowerCase(), 1_000, 'listing')]);
    assert.deepEqual(
      (await store.read(scope)).map((r) => r.answer),
      [{ certificateAuthorityData: 'event' }],
    );
    await store.write([
      aks(
        AKS_ID.toUpperCase().replace(`/SUBSCRIPTIONS/${SUB.toUpperCase()}`, `/subscriptions/${SUB}`),
        3_000,
        'later',
      ),
    ]);
    const records = await store.read(scope);
    assert.equal(records.length, 1);
    assert.deepEqual(records[0]!.answer, { certificateAuthorityData: 'later' });
    await store.write([], [aks(AKS_ID.toLowerCase(), 0, '')]);
    assert.deepEqual(await store.read(scope), []);
  });

  it(`${name}: keeps two EKS clusters named alike but for case apart (EKS names are case-sensitive)`, async () => {
    const { store } = await make();
    const lower = eks('ap-northeast-1', 'orders', 1_000);
    const upper = { ...eks('ap-northeast-1', 'Orders', 2_000), answer: { nodegroups: [] } };
    await store.write([lower, upper]);
    const read = () => store.read({ provider: 'eks', account: ACCOUNT, region: 'ap-northeast-1' });
    assert.deepEqual(ids(await read()), ids([lower, upper]));
    assert.deepEqual((await read()).find((r) => r.providerId === lower.providerId)?.answer, lower.answer);
    await store.write([], [upper]);
    assert.deepEqual(await read(), [lower]);
  });

  it(`${name}: reads what is not a record as no record, and the others`, async () => {
    const { store, junk } = await make();
    const payments = eks('us-west-2', 'payments');
    const checkout = eks('us-west-2', 'checkout');
    await store.write([payments, checkout]);
    await junk(checkout);
    const read = await store.read({ provider: 'eks', account: ACCOUNT, region: 'us-west-2' });
    assert.ok(read.every((r) => r.providerId === payments.providerId));
  });
}

describe('the remembered answers', () => {
  let moto: MotoServer;
  let tables = 0;

  before(async () => {
    moto = await startMoto();
  });
  after(async () => moto?.stop());

  behaves('in files', async () => {
    const directory = temporaryDirectory('cpsync-answers-');
    return {
      store: new FileAnswerStore(directory),
      // A torn file: every record of its account and region is unreadable.
      junk: async () => {
        const root = join(directory, 'answers');
        for (const folder of readdirSync(root))
          for (const file of readdirSync(join(root, folder)))
            if (file === 'us-west-2.json')
              writeFileSync(join(root, folder, file), '{"records": [{"provider"');
      },
    };
  });

  /** A new answers table in moto, its store, and a way to put an item there as it is, under the key given. */
  const dynamoTable = async () => {
    const TableName = `cpsync-answers-${++tables}`;
    const client = new DynamoDBClient({
      endpoint: moto.endpoint,
      region: 'us-east-1',
      credentials: HUB_CREDENTIALS,
    });
    await createClusterRecordsTable(moto.endpoint, TableName);
    const put = (record: RememberedAnswer, cluster: string, text: string) =>
      client.send(
        new PutItemCommand({
          TableName,
          Item: {
            cluster: { S: cluster },
            scope: { S: `${record.provider}/${record.account}` },
            region: { S: record.region },
            askedAt: { N: String(record.askedAt) },
            record: { S: text },
          },
        }),
      );
    return { TableName, client, store: new DynamoAnswerStore({ tableName: TableName, client }), put };
  };

  behaves('in DynamoDB', async () => {
    const { store, put } = await dynamoTable();
    return {
      store,
      junk: async (record) => {
        await put(
          record,
          `${record.provider}/${record.providerId.toLowerCase()}`,
          '{"provider": "eks", "answer"',
        );
      },
    };
  });

  it('in DynamoDB: an item an earlier version keyed by a lower-cased EKS id stands for nothing, and is removed', async () => {
    const { TableName, client, store, put } = await dynamoTable();
    const upper = eks('sa-east-1', 'Orders');
    await put(upper, `eks/${upper.providerId.toLowerCase()}`, JSON.stringify(upper));
    const read = await store.read({ provider: 'eks', account: ACCOUNT, region: 'sa-east-1' });
    assert.deepEqual(read, [], 'stands for nothing: the cloud is asked');
    const items = await client.send(new ScanCommand({ TableName }));
    assert.deepEqual(items.Items ?? [], [], 'the misfiled item is gone');
    await store.write([upper]);
    assert.deepEqual(await store.read({ provider: 'eks', account: ACCOUNT, region: 'sa-east-1' }), [upper]);
  });
});
