/**
 * The remembered AKS CAs over random sequences of cloud changes and store states, against the local ARM: CAs
 * changed with or without a sign in the listing, operations started and settled, clusters made, deleted and made
 * again, the store turned to junk or a record aged, listings and one-cluster reads. The oracle is the server's own
 * log of listClusterUserCredential requests and what the test set there: every listing holds exactly the clusters
 * ARM lists (nothing left out or kept on the store's say), each with the CA ARM gave at its last read, and every
 * cluster whose listing changed, that is new, busy, aged or whose record was lost is read in that very listing.
 * The same for EKS node groups against moto (node groups made and deleted through its API, a cluster's version or
 * status changed by the proxy in front of it), the proxy's log the oracle; and, with `clusterMaxAgeMillis`, for
 * DescribeCluster's answers remembered beside them: each cluster as EKS said at its last read, described in
 * exactly the listings where its remembered answer may not stand.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { CreateNodegroupCommand, DeleteNodegroupCommand, EKSClient } from '@aws-sdk/client-eks';
import fc from 'fast-check';
import { AksSource } from '../../adapters/aks/AksSource.ts';
import { EksSource } from '../../adapters/eks/EksSource.ts';
import { FileAnswerStore } from '../../adapters/outbox/FileAnswerStore.ts';
import type { Scope } from '../../core/domain/model/scope.ts';
import type { RememberedAnswer } from '../../core/sync/ports.ts';
import type { ManagedClusterJson } from '../env/fakes/armServer.ts';
import { armForSuite } from '../support/arm.ts';
import { startAwsProxy, type AwsProxy } from '../env/awsProxy.ts';
import { startMoto, type MotoServer } from '../env/moto.ts';
import { accountCredentials, createEksClusters, HUB_ACCOUNT, HUB_CREDENTIALS } from '../support/aws.ts';
import { temporaryDirectory } from '../support/tmp.ts';

const SEED = Number(process.env.CPSYNC_PROPERTY_SEED ?? 20261123);
const SUB = '00000000-1111-2222-3333-666666666666';
const SCOPE: Scope = { provider: 'aks', account: SUB, region: '*' };
const NAMES = ['alpha', 'bravo', 'charlie', 'delta'] as const;

type Step =
  | { kind: 'ca'; name: number; shown: boolean }
  | { kind: 'operation' | 'settle' | 'remove' | 'add' | 'age' | 'one'; name: number }
  | { kind: 'junk' | 'list' };

const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({ kind: fc.constant('ca' as const), name: fc.nat(3), shown: fc.boolean() }),
  fc.record({
    kind: fc.constantFrom('operation', 'settle', 'remove', 'add', 'age', 'one') as fc.Arbitrary<
      'operation' | 'settle' | 'remove' | 'add' | 'age' | 'one'
    >,
    name: fc.nat(3),
  }),
  fc.constantFrom({ kind: 'junk' as const }, { kind: 'list' as const }, { kind: 'list' as const }),
);

describe('remembered AKS CAs over random cloud and store states', () => {
  const arm = armForSuite();

  it('lists exactly what ARM lists, each CA as ARM last gave it, and reads every cluster whose answer may have changed', async () => {
    const { server, credential } = arm;
    let runs = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 4, maxLength: 24 }), async (steps) => {
        runs += 1;
        const directory = temporaryDirectory('cpsync-answers-');
        const store = new FileAnswerStore(directory);
        const source = new AksSource({ credential, endpoint: server.endpoint, answers: store });
        const id = (name: string) =>
          `/subscriptions/${SUB}/resourcegroups/rg/providers/Microsoft.ContainerService/managedClusters/${name}-${runs}`;
        let version = 0;
        const make = (name: string): ManagedClusterJson => ({
          id: id(name),
          name: `${name}-${runs}`,
          location: 'westeurope',
          systemData: { createdAt: new Date(Date.UTC(2024, 0, 1, 0, ++version)).toISOString() },
          properties: {
            provisioningState: 'Succeeded',
            kubernetesVersion: '1.30',
            fqdn: `${name}-${runs}.hcp.westeurope.azmk8s.io`,
            agentPoolProfiles: [{ name: 'system', count: 1, vmSize: 'Standard_D4s_v5' }],
          },
        });
        const live = new Map<string, ManagedClusterJson>();
        const sync = () => server.clusters.set(SUB, [...live.values()]);
        /** The CA ARM gives each cluster now, and the one it gave at cpsync's last read. */
        const current = new Map<string, string>();
        const lastSaid = new Map<string, string>();
        /** Clusters whose next listing must read their CA. */
        const mustRead = new Set<string>();
        const setCa = (key: string) => {
          const ca = Buffer.from(`ca of ${key} #${++version}`).toString('base64');
          current.set(key, ca);
          server.caData.set(id(key).toLowerCase(), ca);
        };
        const add = (name: string) => {
          live.set(name, make(name));
          setCa(name);
          mustRead.add(name);
          sync();
        };
        add(NAMES[0]);
        add(NAMES[1]);
        /** Names whose CA ARM was asked for since `from`. */
        const readSince = (from: number) =>
          new Set(
            server.requests
              .slice(from)
              .filter((r) => r.path.endsWith('/listClusterUserCredential'))
              .map((r) => r.path.split('/').at(-2)!.replace(`-${runs}`, '')),
          );
        for (const s of [...steps, { kind: 'list' } as const]) {
          const name = 'name' in s ? NAMES[s.name]! : '';
          const cluster = live.get(name);
          switch (s.kind) {
            case 'ca':
              if (!cluster) break;
              setCa(name);
              if (s.shown) {
                cluster.systemData = {
                  ...cluster.systemData,
                  lastModifiedAt: new Date(++version * 1000).toISOString(),
                };
                mustRead.add(name);
              }
              break;
            case 'operation':
              if (!cluster) break;
              cluster.properties.provisioningState = 'Updating';
              mustRead.add(name);
              break;
            case 'settle':
              if (!cluster) break;
              if (cluster.properties.provisioningState !== 'Succeeded') mustRead.add(name);
              cluster.properties.provisioningState = 'Succeeded';
              break;
            case 'remove':
              live.delete(name);
              sync();
              break;
            case 'add':
              if (!cluster) add(name);
              break;
            case 'age': {
              const record = (await store.read(SCOPE)).find((r) => r.providerId === id(name));
              if (!record) break;
              await store.write([], [record]);
              await store.write([{ ...record, askedAt: record.askedAt - 25 * 3_600_000 }]);
              mustRead.add(name);
              break;
            }
            case 'junk': {
              const root = join(directory, 'answers');
              if (!existsSync(root)) break;
              for (const folder of readdirSync(root, { withFileTypes: true }).filter((d) => d.isDirectory()))
                for (const file of readdirSync(join(root, folder.name)))
                  writeFileSync(join(root, folder.name, file), '{"records": [');
              for (const key of live.keys()) mustRead.add(key);
              break;
            }
            case 'one': {
              if (!cluster) break;
              const one = await source.getCluster({
                scope: SCOPE,
                name: `${name}-${runs}`,
                resourceGroup: 'rg',
              });
              assert.equal(one?.certificateAuthorityData, current.get(name), 'one cluster is read afresh');
              lastSaid.set(name, current.get(name)!);
              mustRead.delete(name);
              break;
            }
            case 'list': {
              const from = server.requests.length;
              const listing = await source.listScope(SCOPE);
              const read = readSince(from);
              assert.equal(listing.outcome.kind, 'complete');
              assert.deepEqual(
                listing.clusters.map((c) => c.providerId).sort(),
                [...live.values()].map((c) => c.id).sort(),
                'exactly the clusters ARM lists',
              );
              for (const key of mustRead)
                if (live.has(key))
                  assert.ok(read.has(key), `${key}: its answer may have changed, so it is read`);
              for (const key of read) lastSaid.set(key, current.get(key)!);
              for (const observed of listing.clusters) {
                const key = observed.name.replace(`-${runs}`, '');
                assert.equal(
                  observed.certificateAuthorityData,
                  lastSaid.get(key),
                  `${key}: the CA ARM last gave`,
                );
              }
              // A busy cluster stays to be read at the next listing too.
              for (const key of [...mustRead])
                if (!live.has(key) || live.get(key)!.properties.provisioningState === 'Succeeded')
                  mustRead.delete(key);
              break;
            }
          }
        }
        server.clusters.delete(SUB);
      }),
      { seed: SEED, numRuns: 60 },
    );
  });
});

type EksStep =
  | { kind: 'scale'; cluster: number; shown: boolean }
  | { kind: 'busy' | 'settle' | 'age' | 'one'; cluster: number }
  | { kind: 'junk' | 'list' };

const eksStep: fc.Arbitrary<EksStep> = fc.oneof(
  fc.record({ kind: fc.constant('scale' as const), cluster: fc.nat(1), shown: fc.boolean() }),
  fc.record({
    kind: fc.constantFrom('busy', 'settle', 'age', 'one') as fc.Arbitrary<'busy' | 'settle' | 'age' | 'one'>,
    cluster: fc.nat(1),
  }),
  fc.constantFrom({ kind: 'junk' as const }, { kind: 'list' as const }, { kind: 'list' as const }),
);

describe('remembered EKS node groups over random cloud and store states', () => {
  let moto: MotoServer;
  let proxy: AwsProxy;
  let eks: EKSClient;
  /** What the proxy makes DescribeCluster say of each cluster, over what moto says. */
  const described = new Map<string, { version?: string; status?: string }>();
  const REGION = 'ap-northeast-1';

  before(async () => {
    moto = await startMoto();
    proxy = await startAwsProxy(moto.endpoint);
    proxy.rewriteAnswer(/^\/clusters\/[^/?]+$/, (answer, call) => {
      Object.assign(answer.cluster!, described.get(decodeURIComponent(call.path.slice('/clusters/'.length))));
    });
    eks = new EKSClient({
      endpoint: moto.endpoint,
      region: REGION,
      credentials: await accountCredentials(moto.endpoint, HUB_ACCOUNT),
    });
  });
  after(async () => {
    eks?.destroy();
    await proxy?.stop();
    await moto?.stop();
  });

  /** One run's estate: two clusters of one node group each, a store of their own, and a source reading them. */
  const estate = async (names: string[], options: ConstructorParameters<typeof EksSource>[0] = {}) => {
    const directory = temporaryDirectory('cpsync-answers-');
    const store = new FileAnswerStore(directory);
    const source = new EksSource({
      endpoint: proxy.endpoint,
      credentials: async () => HUB_CREDENTIALS,
      hubAccountId: HUB_ACCOUNT,
      answers: store,
      ...options,
    });
    await createEksClusters(
      moto.endpoint,
      HUB_ACCOUNT,
      REGION,
      names.map((name) => ({
        name,
        nodegroups: [{ name: 'g0', instanceTypes: ['m6i.large'], desiredSize: 1 }],
      })),
    );
    /** Node groups each cluster has now (by name: desired size). */
    const current = new Map(names.map((name) => [name, new Map([['g0', 1]])]));
    const scope: Scope = { provider: 'eks', account: HUB_ACCOUNT, region: REGION };
    /** Node groups made so far in this estate: each is named (and, when shown, its cluster's version set) by it. */
    let version = 0;
    /** A node group of 2 made through EKS's API. */
    const addNodegroup = async (name: string, group: string) => {
      await eks.send(
        new CreateNodegroupCommand({
          clusterName: name,
          nodegroupName: group,
          nodeRole: `arn:aws:iam::${HUB_ACCOUNT}:role/eks-node`,
          subnets: ['subnet-0a1b2c3d'],
          instanceTypes: ['m6i.large'],
          scalingConfig: { minSize: 0, maxSize: 5, desiredSize: 2 },
        }),
      );
      current.get(name)!.set(group, 2);
    };
    return {
      directory,
      store,
      source,
      scope,
      current,
      nodes: (name: string) => [...current.get(name)!.values()].reduce((a, b) => a + b, 0),
      /** What a step changes in the cloud: a node group added (its cluster's answer changed too when `shown`), a cluster busy or settled again. */
      change: async (s: EksStep, name: string) => {
        if (s.kind === 'scale') {
          await addNodegroup(name, `g${++version}`);
          if (s.shown) described.set(name, { ...described.get(name), version: `1.${40 + version}` });
        } else if (s.kind === 'busy') described.set(name, { ...described.get(name), status: 'UPDATING' });
        else if (s.kind === 'settle') described.set(name, { ...described.get(name), status: 'ACTIVE' });
      },
      /** `name`'s remembered record, written again as `older` makes it; false when there is none. */
      age: async (name: string, older: (record: RememberedAnswer) => RememberedAnswer) => {
        const record = (await store.read(scope)).find((r) => r.providerId.endsWith(`/${name}`));
        if (!record) return false;
        await store.write([], [record]);
        await store.write([older(record)]);
        return true;
      },
      /** A listing of the scope, which must be complete and hold exactly the estate's clusters, and the GET calls it made. */
      list: async () => {
        const from = proxy.calls.length;
        const listing = await source.listScope(scope);
        assert.equal(listing.outcome.kind, 'complete');
        const mine = listing.clusters.filter((c) => names.includes(c.name));
        assert.deepEqual(mine.map((c) => c.name).sort(), [...names].sort(), 'exactly the clusters EKS lists');
        return { mine, calls: proxy.calls.slice(from).filter((c) => c.method === 'GET') };
      },
      /** Every file of the store made junk; false when there is none yet. */
      junk: () => {
        const root = join(directory, 'answers');
        if (!existsSync(root)) return false;
        for (const folder of readdirSync(root))
          for (const file of readdirSync(join(root, folder)))
            writeFileSync(join(root, folder, file), '{"records": [');
        return true;
      },
      /** The node groups made, deleted again. */
      clear: async () => {
        for (const name of names)
          for (const group of current.get(name)!.keys())
            await eks.send(new DeleteNodegroupCommand({ clusterName: name, nodegroupName: group }));
      },
    };
  };

  it('lists exactly the clusters EKS lists, each with the node groups EKS gave at its last read, and reads every cluster whose node groups may have changed', async () => {
    let runs = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(eksStep, { minLength: 3, maxLength: 12 }), async (steps) => {
        runs += 1;
        const names = [`one-${runs}`, `two-${runs}`];
        const { source, scope, nodes, change, age, list, junk, clear } = await estate(names);
        /** Node groups as EKS gave them at cpsync's last read. */
        const lastSaid = new Map<string, number>();
        const mustRead = new Set(names);
        for (const s of [...steps, { kind: 'list' } as const]) {
          const name = 'cluster' in s ? names[s.cluster]! : '';
          switch (s.kind) {
            case 'scale':
              if (s.shown) mustRead.add(name);
              await change(s, name);
              break;
            case 'busy':
              mustRead.add(name);
              await change(s, name);
              break;
            case 'settle':
              if (described.get(name)?.status) mustRead.add(name);
              await change(s, name);
              break;
            case 'age':
              if (await age(name, (record) => ({ ...record, askedAt: record.askedAt - 7 * 3_600_000 })))
                mustRead.add(name);
              break;
            case 'junk':
              if (junk()) for (const key of names) mustRead.add(key);
              break;
            case 'one': {
              const one = await source.getCluster({ scope, name });
              assert.equal(one?.nodes.count, nodes(name), 'one cluster is read afresh');
              lastSaid.set(name, nodes(name));
              mustRead.delete(name);
              break;
            }
            case 'list': {
              const { mine, calls } = await list();
              const read = new Set(
                calls.flatMap((c) => /^\/clusters\/([^/?]+)\/node-groups/.exec(c.path)?.[1] ?? []),
              );
              for (const key of mustRead)
                assert.ok(read.has(key), `${key}: its node groups may have changed, so they are read`);
              for (const key of read) if (names.includes(key)) lastSaid.set(key, nodes(key));
              for (const observed of mine)
                assert.equal(
                  observed.nodes.count,
                  lastSaid.get(observed.name),
                  `${observed.name}: as EKS last said`,
                );
              for (const key of [...mustRead])
                if (described.get(key)?.status !== 'UPDATING') mustRead.delete(key);
              break;
            }
          }
        }
        await clear();
      }),
      { seed: SEED, numRuns: 12 },
    );
  });

  it('with DescribeCluster remembered too (clusterMaxAgeMillis): every cluster as EKS last said, and described whenever its answer may not stand', async () => {
    let runs = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(eksStep, { minLength: 3, maxLength: 12 }), async (steps) => {
        runs += 1;
        const names = [`kept-one-${runs}`, `kept-two-${runs}`];
        const { source, scope, nodes, change, age, list, junk, clear } = await estate(names, {
          clusterMaxAgeMillis: 3_600_000,
        });
        /** What DescribeCluster says of a cluster now: moto's answer as the proxy changes it. */
        const cloud = (name: string) => ({
          version: described.get(name)?.version ?? '1.31',
          status: described.get(name)?.status ?? 'ACTIVE',
        });
        /** What EKS said at cpsync's last read of each cluster: DescribeCluster's, and its node groups'. */
        const lastDescribed = new Map<string, { version: string; status: string }>();
        const lastNodes = new Map<string, number>();
        /** Clusters whose remembered answer cannot stand: new, last read in change, aged, or lost. */
        const mustDescribe = new Set(names);
        for (const s of [...steps, { kind: 'list' } as const]) {
          const name = 'cluster' in s ? names[s.cluster]! : '';
          switch (s.kind) {
            case 'scale':
            case 'busy':
            case 'settle':
              await change(s, name);
              break;
            case 'age':
              if (
                await age(name, (record) => ({
                  ...record,
                  answer: {
                    ...record.answer,
                    describedAt: Number(record.answer.describedAt) - 2 * 3_600_000,
                  },
                }))
              )
                mustDescribe.add(name);
              break;
            case 'junk':
              if (junk()) for (const key of names) mustDescribe.add(key);
              break;
            case 'one': {
              const one = await source.getCluster({ scope, name });
              assert.equal(one?.nodes.count, nodes(name), 'one cluster is read afresh');
              assert.equal(one?.kubernetesVersion, cloud(name).version, 'and described afresh');
              lastDescribed.set(name, cloud(name));
              lastNodes.set(name, nodes(name));
              if (cloud(name).status === 'ACTIVE') mustDescribe.delete(name);
              else mustDescribe.add(name);
              break;
            }
            case 'list': {
              const { mine, calls } = await list();
              const describedNow = new Set(
                calls.flatMap((c) => /^\/clusters\/([^/?]+)$/.exec(c.path)?.[1] ?? []),
              );
              const groupsRead = new Set(
                calls.flatMap((c) => /^\/clusters\/([^/?]+)\/node-groups/.exec(c.path)?.[1] ?? []),
              );
              // Described exactly when the remembered answer may not stand: never fewer, and no more (it saves calls).
              assert.deepEqual(
                names.filter((key) => describedNow.has(key)),
                names.filter((key) => mustDescribe.has(key)),
                'described exactly the clusters whose remembered answer may not stand',
              );
              for (const key of names) {
                if (describedNow.has(key)) {
                  const before = lastDescribed.get(key);
                  const now = cloud(key);
                  if (!before || before.version !== now.version || now.status !== 'ACTIVE')
                    assert.ok(
                      groupsRead.has(key),
                      `${key}: described changed or in change, so its node groups are read`,
                    );
                  lastDescribed.set(key, now);
                }
                if (groupsRead.has(key)) lastNodes.set(key, nodes(key));
              }
              for (const observed of mine) {
                assert.equal(
                  observed.kubernetesVersion,
                  lastDescribed.get(observed.name)?.version,
                  `${observed.name}: the version EKS last said`,
                );
                assert.equal(
                  observed.health.status,
                  lastDescribed.get(observed.name)?.status,
                  `${observed.name}: the status EKS last said`,
                );
                assert.equal(
                  observed.nodes.count,
                  lastNodes.get(observed.name),
                  `${observed.name}: the node groups EKS last gave`,
                );
              }
              for (const key of names)
                if (lastDescribed.get(key)?.status === 'ACTIVE') mustDescribe.delete(key);
                else mustDescribe.add(key);
              break;
            }
          }
        }
        await clear();
      }),
      { seed: SEED, numRuns: 12 },
    );
  });
});
