/**
 * The grants ledger, where only cpsync writes what it granted: the file ledger in the state directory (the
 * CLI's) and the DynamoDB ledger in moto with the table as the stack makes it (partition key `cluster`, the
 * `byAccount` index). Each keeps one record per cluster, reads an account's records (every region, no other
 * account's), takes an Azure id in any case as one cluster, and removes what it is told to.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { DeleteItemCommand, PutItemCommand, ScanCommand } from '@aws-sdk/client-dynamodb';
import { ledgerKey, type GrantRecord } from '../../../../core/domain/grants.ts';
import { foldCase } from '../../../../core/domain/naming.ts';
import type { GrantLedger } from '../../../../core/sync/ports.ts';
import { FileGrantLedger } from '../../../../adapters/outbox/FileGrantLedger.ts';
import { startAwsProxy, type AwsProxy } from '../../../env/awsProxy.ts';
import {
  dynamoLedgerAt,
  dynamoLedgerTable,
  laggingIndex,
  type LaggingIndex,
} from '../../../env/ledgerTable.ts';
import { startMoto, type MotoServer } from '../../../env/moto.ts';
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

  it(`${name}: never removes or replaces another cluster's record whose id is this one's lowered whole (property)`, async () => {
    // Resource groups whose capitals are non-ASCII (a Kelvin sign lowers to `k`, an Angstrom sign to `å`): earlier
    // versions keyed this cluster's record by its id lowered whole, which is the other cluster's key today.
    const letters = ['a', 'k', '\u212A', 'K', '\u00C5', '\u212B', '\u00E5', '\u00C9', '\u00E9', '-'];
    const groups = fc
      .array(fc.constantFrom(...letters), { minLength: 1, maxLength: 6 })
      .map((chars) => `rg-${chars.join('')}`)
      .filter((group) => group.toLowerCase() !== foldCase(group));
    const operations = fc.array(
      fc.record({ kind: fc.constantFrom('write', 'remove'), which: fc.constantFrom('upper', 'lowered') }),
      { minLength: 1, maxLength: 8 },
    );
    await fc.assert(
      fc.asyncProperty(groups, operations, async (group, steps) => {
        const ledger = await make();
        const account = '00000000-1111-2222-3333-444444444444';
        const idWith = (rg: string) => AKS_ID.replace('rg-web', rg);
        const clusters = { upper: idWith(group), lowered: idWith(group.toLowerCase()) };
        assert.notEqual(ledgerKey(aks(clusters.upper)), ledgerKey(aks(clusters.lowered)), 'two clusters');
        const model = new Map<string, GrantRecord>();
        for (const [at, { kind, which }] of steps.entries()) {
          const record = { ...aks(clusters[which]), missed: at };
          if (kind === 'write') {
            await ledger.write([record]);
            model.set(which, record);
          } else {
            await ledger.write([], [record]);
            model.delete(which);
          }
          const byId = (records: GrantRecord[]) =>
            [...records].sort((a, b) => (a.providerId < b.providerId ? -1 : 1));
          assert.deepEqual(
            byId(await ledger.read({ provider: 'aks', account })),
            byId([...model.values()]),
            `after ${kind} ${which}`,
          );
          assert.deepEqual(
            byId(
              await ledger.read(
                { provider: 'aks', account },
                Object.values(clusters).map((id) => ledgerKey(aks(id))),
              ),
            ),
            byId([...model.values()]),
            `asked by key, after ${kind} ${which}`,
          );
        }
      }),
      { numRuns: 40 },
    );
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

  before(async () => {
    moto = await startMoto();
  });
  after(async () => moto?.stop());

  behaves('in files', async () => new FileGrantLedger(temporaryDirectory('cpsync-ledger-')));

  /** A ledger table as the stack makes it, and the ledger on it (through `endpoint`: moto, or a proxy before it). */
  const dynamoLedger = (endpoint = moto.endpoint) => dynamoLedgerAt(endpoint);

  behaves('in DynamoDB', () => dynamoLedger());

  describe('a record an earlier version kept under an Azure id lowered whole (non-ASCII capitals too)', () => {
    const account = '00000000-1111-2222-3333-444444444444';
    const scope = { provider: 'aks' as const, account };
    const record = aks(AKS_ID.replace('rg-web', 'Équipe'));
    const earlierKey = record.providerId.toLowerCase();

    /** Found, replaced by today's once written, today's preferred where both are kept, and both removed at once. */
    async function upgrades(ledger: GrantLedger, keptAsEarlier: (record: GrantRecord) => Promise<void>) {
      assert.notEqual(ledgerKey(record), earlierKey, "today's key differs");
      await keptAsEarlier(record);
      assert.deepEqual(await ledger.read(scope), [record], 'the record is found');
      const today = { ...record, grants: [], swept: true as const };
      await ledger.write([today]);
      assert.deepEqual(await ledger.read(scope), [today], "once written, today's alone");
      await keptAsEarlier(record);
      assert.deepEqual(await ledger.read(scope), [today], "both kept: today's");
      await ledger.write([], [today]);
      assert.deepEqual(await ledger.read(scope), [], 'both removed');
    }

    it('in files', async () => {
      const directory = temporaryDirectory('cpsync-ledger-');
      await upgrades(new FileGrantLedger(directory), async (earlier) => {
        // As an earlier version filed it: named by the hash of its key, in its account's folder.
        const folder = join(
          directory,
          'grants',
          `aks-${createHash('sha256').update(account).digest('hex').slice(0, 16)}`,
        );
        mkdirSync(folder, { recursive: true });
        const name = createHash('sha256').update(earlierKey).digest('hex').slice(0, 32);
        writeFileSync(join(folder, `${name}.json`), JSON.stringify(earlier));
      });
    });

    it('in DynamoDB', async () => {
      const { ledger, table, client } = await dynamoLedgerTable(moto.endpoint);
      await upgrades(ledger, async (earlier) => {
        await client.send(
          new PutItemCommand({
            TableName: table,
            Item: {
              cluster: { S: earlierKey },
              account: { S: `aks/${account}` },
              record: { S: JSON.stringify(earlier) },
            },
          }),
        );
      });
      const { Count } = await client.send(new ScanCommand({ TableName: table }));
      assert.equal(Count, 0, 'nothing left in the table');
    });
  });

  it("in DynamoDB: takes an item for a cluster's grants only when it is a record of the account read, kept under that cluster's own key; one put under another key or indexed under another account is no one's (property)", async () => {
    const { ledger, table, client } = await dynamoLedgerTable(moto.endpoint);
    const ACCOUNT = '111122223333';
    const scope = { provider: 'eks' as const, account: ACCOUNT };
    // The genuine record, written by the ledger: always read.
    const genuine = eks('us-east-1', 'genuine', ACCOUNT);
    await ledger.write([genuine]);
    const recordOf = fc.record({
      name: fc.stringMatching(/^[a-z][a-z0-9-]{0,12}$/),
      account: fc.constantFrom(ACCOUNT, '999999999999'),
      provider: fc.constantFrom('eks', 'gke'),
    });
    // Where an item is put: its own key, another cluster's, or a key of no cluster (a GKE self link, any text).
    const keyFor = (record: GrantRecord) =>
      fc.oneof(
        fc.constant(ledgerKey(record)),
        fc.constant(genuine.providerId),
        fc.constant(`${ledgerKey(record)}x`),
        fc.stringMatching(/^https:\/\/container\.googleapis\.com\/v1\/projects\/[a-z]{1,8}$/),
      );
    let n = 0;
    await fc.assert(
      fc.asyncProperty(
        recordOf.chain((drawn) => {
          const record: GrantRecord = {
            ...eks('us-east-1', drawn.name, drawn.account),
            provider: drawn.provider as GrantRecord['provider'],
            grants: [{ consumer: 'intruder', identity: 'arn:aws:iam::666666666666:role/x', level: 'admin' }],
          };
          return fc.tuple(fc.constant(record), keyFor(record));
        }),
        async ([record, key]) => {
          n += 1;
          if (key === genuine.providerId) return; // the genuine record's own item is the ledger's to write
          await client.send(
            new PutItemCommand({
              TableName: table,
              Item: {
                cluster: { S: key },
                account: { S: `eks/${ACCOUNT}` },
                record: { S: JSON.stringify(record) },
              },
            }),
          );
          try {
            const read = await ledger.read(scope, [key]);
            const kept = key === ledgerKey(record) && record.provider === 'eks' && record.account === ACCOUNT;
            assert.deepEqual(
              read.map((r) => r.providerId).sort(),
              [genuine.providerId, ...(kept ? [record.providerId] : [])].sort(),
              `${key}: ${JSON.stringify(record)}`,
            );
          } finally {
            await client.send(new DeleteItemCommand({ TableName: table, Key: { cluster: { S: key } } }));
          }
        },
      ),
      { numRuns: 40, seed: 20261203 },
    );
    assert.ok(n >= 40);
  });

  describe('in DynamoDB, its account index lagging behind the table (DynamoDB reads an index only eventually consistently)', () => {
    let proxy: AwsProxy;
    let index: LaggingIndex;

    before(async () => {
      proxy = await startAwsProxy(moto.endpoint);
      index = laggingIndex(proxy);
    });
    after(async () => proxy?.stop());

    const ACCOUNT = '111122223333';
    const CLUSTERS = ['payments', 'checkout', 'search'];
    /** A cluster's record after a write of the drawn kind: `n` names the consumer, so two writes differ. */
    const recordOf = (name: string, n: number): GrantRecord => ({
      ...eks('us-east-1', name, ACCOUNT),
      grants: [{ consumer: `consumer-${n}`, identity: `arn:aws:iam::${ACCOUNT}:role/c${n}`, level: 'view' }],
    });

    it('reads every record the index names, and every one asked for by key, from the table as it is now: never a record older than the last write, never one deleted (property)', async () => {
      const step = fc.record({ cluster: fc.constantFrom(...CLUSTERS), remove: fc.boolean() });
      await fc.assert(
        fc.asyncProperty(
          fc.array(step, { maxLength: 6 }),
          fc.array(step, { minLength: 1, maxLength: 6 }),
          fc.subarray(CLUSTERS),
          async (earlier, later, asked) => {
            const ledger = await dynamoLedger(proxy.endpoint);
            /** The table's records, as the writes left them. */
            const table = new Map<string, GrantRecord>();
            let n = 0;
            const apply = async (steps: typeof earlier) => {
              for (const { cluster, remove } of steps) {
                const record = recordOf(cluster, ++n);
                if (remove) {
                  await ledger.write([], [record]);
                  table.delete(cluster);
                } else {
                  await ledger.write([record]);
                  table.set(cluster, record);
                }
              }
            };
            await apply(earlier);
            // The index as it is after the earlier writes; it then stops there while the table goes on.
            await index.stopAt(() => ledger.read({ provider: 'eks', account: ACCOUNT }));
            const indexed = new Set(table.keys());
            try {
              await apply(later);
              const read = await ledger.read({ provider: 'eks', account: ACCOUNT });
              // What the index names, as the table holds it now (a record the index does not show yet is read
              // as none: the sync then scans the cluster, never taking an older record for the cluster's).
              assert.deepEqual(
                read.sort((a, b) => a.providerId.localeCompare(b.providerId)),
                [...table]
                  .filter(([cluster]) => indexed.has(cluster))
                  .map(([, record]) => record)
                  .sort((a, b) => a.providerId.localeCompare(b.providerId)),
              );
              // Clusters asked for by key are read whether or not the index shows them yet.
              const byKey = await ledger.read(
                { provider: 'eks', account: ACCOUNT },
                asked.map((name) => ledgerKey(recordOf(name, 0))),
              );
              assert.deepEqual(
                byKey.sort((a, b) => a.providerId.localeCompare(b.providerId)),
                [...table]
                  .filter(([cluster]) => indexed.has(cluster) || asked.includes(cluster))
                  .map(([, record]) => record)
                  .sort((a, b) => a.providerId.localeCompare(b.providerId)),
              );
            } finally {
              index.catchUp();
            }
          },
        ),
        { numRuns: 25 },
      );
      const reads = proxy.calls.filter((c) => c.operation.endsWith('.BatchGetItem'));
      assert.ok(
        reads.length > 0 &&
          reads.every(
            (c) =>
              JSON.parse(c.body).RequestItems[Object.keys(JSON.parse(c.body).RequestItems)[0]!]
                .ConsistentRead === true,
          ),
        'read consistently',
      );
    });

    it('asks again for the records DynamoDB leaves unprocessed (throttled), and reads them all', async () => {
      const ledger = await dynamoLedger(proxy.endpoint);
      const records = CLUSTERS.map((name, i) => recordOf(name, i));
      await ledger.write(records);
      // The first read of the table answers one record and leaves the others unprocessed, as DynamoDB may.
      let left = 0;
      const stop = proxy.intercept(async (call, forward) => {
        if (!call.operation.endsWith('.BatchGetItem') || left > 0) return undefined;
        const body = JSON.parse(call.body) as {
          RequestItems: Record<string, { Keys: unknown[]; ConsistentRead?: boolean }>;
        };
        const [table, request] = Object.entries(body.RequestItems)[0]!;
        const [first, ...rest] = request.Keys;
        left = rest.length;
        const answer = await forward(
          JSON.stringify({ RequestItems: { [table]: { ...request, Keys: [first] } } }),
        );
        const parsed = JSON.parse(answer.body) as Record<string, unknown>;
        return {
          status: 200,
          body: JSON.stringify({ ...parsed, UnprocessedKeys: { [table]: { ...request, Keys: rest } } }),
        };
      });
      try {
        const read = await ledger.read({ provider: 'eks', account: ACCOUNT });
        assert.equal(left, 2, 'two keys were left unprocessed');
        assert.deepEqual(read.map((r) => r.providerId).sort(), records.map((r) => r.providerId).sort());
      } finally {
        stop();
      }
    });
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

  it("in files: a cluster's record found unreadable again is moved aside beside the first copy, never over it", async () => {
    const directory = temporaryDirectory('cpsync-ledger-');
    const ledger = new FileGrantLedger(directory);
    const scope = { provider: 'eks' as const, account: '111122223333' };
    const texts = ['{"providerId": "arn:aws:eks first', '{"providerId": "arn:aws:eks second'];
    for (const text of texts) {
      await ledger.write([eks('us-east-1', 'payments')]);
      const folder = join(directory, 'grants', readdirSync(join(directory, 'grants'))[0]!);
      writeFileSync(join(folder, readdirSync(folder)[0]!), text);
      assert.deepEqual(await ledger.read(scope), []);
    }
    const aside = readdirSync(join(directory, 'quarantine')).map((name) =>
      readFileSync(join(directory, 'quarantine', name), 'utf8'),
    );
    assert.deepEqual(aside.sort(), texts, 'both copies kept');
    assert.equal(new Set(ledger.quarantined().map((q) => q.path)).size, 2);
  });
});
