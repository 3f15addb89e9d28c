/**
 * The deletion grace's counts, where only cpsync writes: the file store in the state directory (the CLI's) and the
 * DynamoDB store in moto with the table as the stack makes it (partition key `cluster`, the `byScope` index by scope
 * and region). Each keeps one count per cluster, reads an account's in one region or every region, never replaces a
 * later count by an earlier one, removes what it is told to, and reads as no count what is not one of its own: an
 * item that is not a count, one kept under another cluster's key, one indexed under another region than its own.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { DynamoDBClient, PutItemCommand } from '@aws-sdk/client-dynamodb';
import type { AbsenceStore, MissedListings } from '../../../../core/sync/ports.ts';
import { DynamoAbsenceStore } from '../../../../adapters/outbox/DynamoAbsenceStore.ts';
import { FileAbsenceStore } from '../../../../adapters/outbox/FileAbsenceStore.ts';
import { startMoto, type MotoServer } from '../../../env/moto.ts';
import { startAwsProxy } from '../../../env/awsProxy.ts';
import { laggingIndex } from '../../../env/ledgerTable.ts';
import { createClusterRecordsTable, HUB_CREDENTIALS } from '../../../support/aws.ts';
import { temporaryDirectory } from '../../../support/tmp.ts';

const ACCOUNT = '111122223333';
const SUB = '00000000-1111-2222-3333-444444444444';
const eks = (region: string, name: string, missed = 1, countedAt = 1_000): MissedListings => ({
  provider: 'eks',
  account: ACCOUNT,
  region,
  providerId: `arn:aws:eks:${region}:${ACCOUNT}:cluster/${name}`,
  missed,
  countedAt,
});
const ids = (records: MissedListings[]) => records.map((r) => `${r.providerId}=${r.missed}`).sort();

/** The contract both stores keep; `forge` puts `text` where `record`'s count would be (an item or a file). */
function behaves(
  name: string,
  make: () => Promise<{
    store: AbsenceStore;
    forge: (
      record: MissedListings,
      text: string,
      at?: { cluster?: string; region?: string },
    ) => Promise<void>;
  }>,
) {
  it(`${name}: keeps one count per cluster, read by account and region, a later one never replaced by an earlier one`, async () => {
    const { store } = await make();
    await store.write([eks('us-east-1', 'pay', 1), eks('eu-west-1', 'pay', 2)]);
    const read = (region: string) => store.read({ provider: 'eks', account: ACCOUNT, region });
    assert.deepEqual(ids(await read('*')), ids([eks('us-east-1', 'pay', 1), eks('eu-west-1', 'pay', 2)]));
    assert.deepEqual(await read('us-east-1'), [eks('us-east-1', 'pay', 1)]);
    await store.write([eks('us-east-1', 'pay', 2, 2_000)]);
    await store.write([eks('us-east-1', 'pay', 1, 1_500)]);
    assert.deepEqual(await read('us-east-1'), [eks('us-east-1', 'pay', 2, 2_000)], 'the later count stays');
    await store.write([], [eks('us-east-1', 'pay')]);
    assert.deepEqual(await read('us-east-1'), []);
    const azure = {
      provider: 'aks' as const,
      account: SUB,
      region: 'westeurope',
      providerId: `/subscriptions/${SUB}/resourceGroups/RG/providers/Microsoft.ContainerService/managedClusters/Web`,
      missed: 1,
      countedAt: 1_000,
    };
    await store.write([azure]);
    await store.write([], [{ ...azure, providerId: azure.providerId.toLowerCase() }]);
    assert.deepEqual(
      await store.read({ provider: 'aks', account: SUB, region: '*' }),
      [],
      'an Azure id in another case is the same cluster',
    );
  });

  it(`${name}: reads as no count what is not a count of its own`, async () => {
    const { store, forge } = await make();
    const kept = eks('us-west-2', 'kept', 1);
    await store.write([kept]);
    const read = () => store.read({ provider: 'eks', account: ACCOUNT, region: 'us-west-2' });
    for (const missed of [0, -1, 1.5, '3', null])
      await forge(
        eks('us-west-2', `junk-${String(missed)}`),
        JSON.stringify({ ...eks('us-west-2', 'j'), missed }),
      );
    // A count of one cluster kept under another's key, and one indexed under another region than its own.
    await forge(eks('us-west-2', 'victim'), JSON.stringify(eks('us-west-2', 'other', 9)), {
      cluster: `eks/${eks('us-west-2', 'victim').providerId}`,
    });
    await forge(eks('us-west-2', 'moved'), JSON.stringify(eks('eu-central-1', 'moved', 9)), {
      cluster: `eks/${eks('eu-central-1', 'moved').providerId}`,
      region: 'us-west-2',
    });
    const only = async (what: string) => {
      const counted = await read();
      assert.ok(
        counted.every((r) => r.providerId === kept.providerId && r.missed === 1),
        `${what}: only the store's own count: ${ids(counted).join(', ')}`,
      );
      return counted;
    };
    assert.deepEqual(await only('beside junk and forgeries'), [kept]);
    await forge(eks('us-west-2', 'torn'), '{"provider": "eks", "missed"');
    await only('beside a torn item');
  });
}

describe("the deletion grace's counts", () => {
  let moto: MotoServer;
  let tables = 0;

  before(async () => {
    moto = await startMoto();
  });
  after(async () => moto?.stop());

  behaves('in files', async () => {
    const directory = temporaryDirectory('cpsync-absences-');
    const store = new FileAbsenceStore(directory);
    return {
      store,
      // Into the account's file, beside what is there. A file keys nothing: a count names its own cluster and
      // region, so there is no other cluster's key or region to keep one under.
      forge: async (record, text, at) => {
        if (at?.cluster && at.region === undefined) return;
        await store.write([{ ...record, providerId: `${record.providerId}-placeholder` }]);
        const root = join(directory, 'absences');
        for (const folder of readdirSync(root)) {
          const path = join(root, folder, 'account.json');
          const records = (JSON.parse(readFileSync(path, 'utf8')) as { records: unknown[] }).records.filter(
            (r) => !JSON.stringify(r).includes('-placeholder'),
          );
          let forged: unknown;
          try {
            forged = JSON.parse(text);
          } catch {
            writeFileSync(path, text);
            continue;
          }
          writeFileSync(path, JSON.stringify({ records: [...records, forged] }));
        }
      },
    };
  });

  behaves('in DynamoDB', async () => {
    const TableName = `cpsync-absences-${++tables}`;
    const client = new DynamoDBClient({
      endpoint: moto.endpoint,
      region: 'us-east-1',
      credentials: HUB_CREDENTIALS,
    });
    await createClusterRecordsTable(moto.endpoint, TableName);
    return {
      store: new DynamoAbsenceStore({ tableName: TableName, client }),
      forge: async (record, text, at) => {
        await client.send(
          new PutItemCommand({
            TableName,
            Item: {
              cluster: { S: at?.cluster ?? `${record.provider}/${record.providerId}` },
              scope: { S: `${record.provider}/${record.account}` },
              region: { S: at?.region ?? record.region },
              countedAt: { N: String(record.countedAt) },
              record: { S: text },
            },
          }),
        );
      },
    };
  });

  it('in DynamoDB: a count the index still shows after it was removed (the index lags the table) stands for nothing', async () => {
    const proxy = await startAwsProxy(moto.endpoint);
    try {
      const index = laggingIndex(proxy, 'byScope');
      const TableName = `cpsync-absences-${++tables}`;
      await createClusterRecordsTable(moto.endpoint, TableName);
      const client = new DynamoDBClient({
        endpoint: proxy.endpoint,
        region: 'us-east-1',
        credentials: HUB_CREDENTIALS,
      });
      const store = new DynamoAbsenceStore({ tableName: TableName, client });
      const read = () => store.read({ provider: 'eks', account: ACCOUNT, region: '*' });
      const begun = eks('us-east-1', 'begun', 1);
      const kept = eks('us-east-1', 'kept', 1);
      await store.write([begun, kept]);
      await index.stopAt(read);
      // Listed again: its count begins again, while the index still shows it.
      await store.write([kept], [begun]);
      assert.deepEqual(await read(), [kept], 'the table, read consistently, holds only the count kept');
      assert.ok(
        proxy.calls.some(
          (c) => c.operation.endsWith('.BatchGetItem') && c.body.includes('"ConsistentRead":true'),
        ),
        'the index hits were read again from the table',
      );
      index.catchUp();
    } finally {
      await proxy.stop();
    }
  });
});
