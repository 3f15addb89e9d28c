/**
 * Consumer access grants (the `accessGrants` feature) against real parts: the real CLI and hub, EKS access
 * entries at the local EKS API (its documented REST shapes, test/env/eksAccessEntries.ts), and a member
 * kube-apiserver standing for one cluster of each cloud whose authorizer is RBAC (the bindings cpsync makes
 * for GKE and AKS) then EKS's access entries. The consumer has identities of its own in each cloud and
 * reaches the member as consumers do: `cpsync credentials` as its exec plugin. The oracle is the member's
 * answer to the consumer (403 or 201), the access-entry store, the member's bindings and the hub's profiles.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { RbacAuthorizationV1Api } from '@kubernetes/client-node';
import {
  ApiException,
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  PatchStrategy,
  setHeaderOptions,
} from '@kubernetes/client-node';
import { parse, stringify } from 'yaml';
import {
  AZURE_SUBSCRIPTION,
  EKS_ACCOUNT,
  GCP_PROJECT,
  localGoogleFederation,
  type Emulators,
} from '../env/emulators.ts';
import { serveEksAccessEntries, type EksAccessEntries } from '../env/eksAccessEntries.ts';
import { letCpsyncGrantInProject, letCpsyncSeeProject, PROJECT_IAM_ADMIN } from '../env/fakes/gkeServer.ts';
import { AT_MEMBER, letCpsyncGrant, serveFromMember, startEstateMember, type Member } from '../env/member.ts';
import { freeLoopbackAddress, startDroppingListener } from '../env/net.ts';
import { createEksClusters } from '../support/aws.ts';
import { holdTransition } from '../env/transitions.ts';
import { jsonLines, runCli, type CliRun } from '../support/cli.ts';
import { consumerIdentity, consumerKit, type ConsumerKit } from '../support/consumerKit.ts';
import { estateOnHub } from '../support/estate.ts';
import { adminKubeConfig } from '../support/hub.ts';
import {
  eventGridEvent,
  functionUrlRequest,
  gkeAuditEntry,
  lambdaContext,
  pubSubPush,
  startGoogleSigner,
} from '../support/lambda.ts';
import { compose } from '../../adapters/compose/compose.ts';
import { parseConfig } from '../../adapters/compose/config.ts';
import { ALL_PROVIDERS } from '../../adapters/compose/providers/index.ts';
import { makeWebhook } from '../../functions/webhook.ts';
import { syncCluster } from '../../core/sync/engine.ts';
import { ALL_REGIONS } from '../../core/domain/model/scope.ts';
import type { FunctionDeps } from '../../functions/runtime.ts';
import { assertNoCredentials } from '../support/secrets.ts';
import { until } from '../support/until.ts';
import { PROFILE_NAMES } from '../../core/domain/naming.ts';
import { FileGrantLedger } from '../../adapters/outbox/FileGrantLedger.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- hub documents are read freely here
type Doc = Record<string, any>;

const GROUP = { group: 'multicluster.x-k8s.io', version: 'v1alpha1', plural: 'clusterprofiles' };
const CONDITION = 'consumers.cpsync.io/deployer';
const ROLE = `arn:aws:iam::${EKS_ACCOUNT}:role/deployer`;
const GOOGLE = 'deployer@consumers.iam.gserviceaccount.com';
const ENTRA = '5d1c0e2a-7b3f-4c6d-9e8a-0f1b2c3d4e5f';
/** A grant someone made by hand for another consumer: cpsync must never touch it. */
const FOREIGN_ROLE = `arn:aws:iam::${EKS_ACCOUNT}:role/viewer`;
const FOREIGN_GOOGLE = 'viewer@consumers.iam.gserviceaccount.com';
/** The webhook's settings: Pub/Sub's push audience and service account, Event Grid's key. */
const AUDIENCE = 'https://cpsync-webhook.example/gcp';
const PUSHER = 'pubsub-push@acme-data.iam.gserviceaccount.com';
const EVENT_GRID_KEY = 'event-grid-key-for-grants';

describe('consumer access grants: configured consumers reach every cluster of their namespace, and no longer once turned off', () => {
  let emulators: Emulators;
  let member: Member;
  /** analytics' member: it takes each connection and cuts it without an answer. */
  let dropping: Awaited<ReturnType<typeof startDroppingListener>> | undefined;
  let entries: EksAccessEntries;
  let kit: ConsumerKit;
  let objects: CustomObjectsApi;
  let memberRbac: RbacAuthorizationV1Api;
  let namespace: string;
  let consumers: string;
  let config: string;
  let document: Doc;
  let azureRbac = false;
  /** Everything the runs showed (CLI output, events, profiles): scanned for credentials at the end. */
  const captured: string[] = [];
  /** The AKS cluster the member stands for, as ARM holds it. */
  const batch = () => emulators.arm.clusters.get(AZURE_SUBSCRIPTION)!.find((c) => c.name === AT_MEMBER.aks)!;

  before(async () => {
    const estate = await estateOnHub('grants');
    ({ emulators, namespace } = estate);
    consumers = `${namespace}-deploy`;
    objects = adminKubeConfig(estate.state).makeApiClient(CustomObjectsApi);

    // The consumer's own identity in each cloud: an assumed IAM role, a Google service account (through
    // workload identity federation), an Entra application.
    const identity = await consumerIdentity(emulators, { roleArn: ROLE, email: GOOGLE, objectId: ENTRA });
    const secrets = identity.secrets;
    kit = consumerKit(emulators, identity.as);

    entries = serveEksAccessEntries(emulators.proxy);
    member = await startEstateMember(emulators, AT_MEMBER.eks, undefined, {
      accessEntries: entries,
      secrets,
      // Once the AKS cluster uses Azure RBAC, the member honours its Azure role assignments as AKS does.
      azureRbacCluster: () => (azureRbac ? batch().id : undefined),
      // GKE lets a Google identity in only with container.clusters.get in the project's IAM policy.
      googleProject: GCP_PROJECT,
    });
    // The project's IAM policy: cpsync's own service account sees the project's clusters; someone gave
    // another consumer GKE's cluster viewer role by hand.
    letCpsyncSeeProject(emulators.gke, GCP_PROJECT, [
      { role: 'roles/container.clusterViewer', members: [`serviceAccount:${FOREIGN_GOOGLE}`] },
    ]);
    serveFromMember(emulators, member);
    // Two clusters whose member cpsync cannot reach, both on loopback: analytics' member takes each connection
    // and cuts it without an answer (cpsync cannot tell whether a request reached it); nothing listens at web's
    // address (a connection refused: nothing was ever reached). Neither waits for a timeout: a member that
    // never answers is test/integration/adapters/grants/lookLeaves.test.ts's `hang`.
    dropping = await startDroppingListener();
    emulators.gke.clusters.get(GCP_PROJECT)!.find((c) => c.name === 'analytics')!.endpoint = dropping.address;
    emulators.arm.clusters.get(AZURE_SUBSCRIPTION)!.find((c) => c.name === 'web')!.properties.fqdn =
      await freeLoopbackAddress(443);
    // What cpsync's own identities (its GKE service account, its Entra application) may do on the member:
    // the manifest docs/configuring.md tells members to apply, bound to them.
    memberRbac = await letCpsyncGrant(emulators, member);

    // The inventory: the clusters of each cloud projected into the consumer's namespace.
    document = parse(readFileSync(emulators.configPath, 'utf8')) as Doc;
    document.hub = { kubeconfig: estate.state.kubeconfig };
    document.outbox = { directory: join(emulators.directory, 'grants-outbox') };
    document.bus = { jsonl: join(emulators.directory, 'grants-events.jsonl') };
    document.inventory = {
      namespace,
      projections: [
        { provider: 'eks', region: 'us-east-1', namespaces: [consumers] },
        { provider: 'gke', namespaces: [consumers] },
        { provider: 'aks', namespaces: [consumers] },
      ],
    };
    // Every sync looks at every cluster's grants (one slot): a cluster turning to Azure RBAC is seen at once.
    // No member here keeps cpsync waiting, so the deadline is one no look on a busy machine comes near: each
    // outcome the runs assert comes from what a member answered, never from a clock.
    document.memberProbe = { timeoutSeconds: 60, budgetSeconds: 60, everyMinutes: 1, slotMinutes: 1 };
    // cpsync reaches GKE members with the estate's Google identity through the local STS (a
    // service-account key's tokens come from Google itself).
    document.providers.gke.credentials = { file: localGoogleFederation(emulators.directory, emulators.gke) };
    document.consumers = [
      {
        name: 'deployer',
        namespaces: [consumers],
        level: 'edit',
        identities: { eks: { roleArn: ROLE }, gke: { principal: GOOGLE }, aks: { objectId: ENTRA } },
      },
    ];
    config = join(emulators.directory, 'grants.yaml');
  });

  after(async () => {
    entries?.stop();
    await member?.stop();
    await dropping?.stop();
    await emulators?.stop();
  });

  const projectPolicy = () => emulators.gke.iamPolicies.get(GCP_PROJECT)!;
  /** cpsync's bindings in the project's IAM policy: role, members, condition. */
  const cpsyncProjectBindings = () =>
    (projectPolicy().bindings ?? []).filter((b) => b.condition?.description?.startsWith('cpsync:'));

  /** A sync with `features`; its grant events as the bus received them (consumer, identity, cluster). */
  async function sync(
    features: Record<string, string>,
    args: string[] = [],
    code = 0,
    onStderr?: (text: string) => void,
  ): Promise<CliRun & { access: string[] }> {
    writeFileSync(config, stringify({ ...document, features }));
    writeFileSync(document.bus.jsonl, '');
    const run = await runCli(['sync', '--config', config, ...args], {
      env: emulators.env,
      ...(onStderr ? { onStderr } : {}),
    });
    captured.push(run.stdout, run.stderr, readFileSync(document.bus.jsonl, 'utf8'));
    assert.equal(run.code, code, run.stderr);
    return { ...run, access: accessEvents() };
  }
  /** The grant events on the bus (consumer, cluster), sorted. */
  const accessEvents = () =>
    jsonLines<Doc>(readFileSync(document.bus.jsonl, 'utf8'))
      .filter((e) => e['detail-type'].startsWith('Consumer Access '))
      .map(
        (e) =>
          `${e['detail-type']} ${e.detail.consumer} ${e.detail.cluster.provider}/${e.detail.cluster.displayName}`,
      )
      .sort();
  const profiles = async () =>
    ((await objects.listNamespacedCustomObject({ ...GROUP, namespace: consumers })) as { items: Doc[] })
      .items;
  /** The consumer's profile of the cluster the member stands for in `cloud`. */
  const memberProfile = async (cloud: keyof typeof AT_MEMBER) =>
    (await profiles()).find(
      (p) => p.spec.displayName === AT_MEMBER[cloud] && p.metadata.labels['cpsync.io/provider'] === cloud,
    )!;
  const condition = (profile: Doc, type = CONDITION) =>
    profile.status.conditions.find((c: Doc) => c.type === type) as Doc | undefined;

  /** A token as the consumer's exec plugin gives it for the profile's cluster (KUBERNETES_EXEC_INFO). */
  function consumerToken(profile: Doc): Promise<string> {
    const cluster = profile.status.accessProviders[0].cluster;
    const info = {
      apiVersion: 'client.authentication.k8s.io/v1',
      kind: 'ExecCredential',
      spec: {
        interactive: false,
        cluster: {
          server: cluster.server,
          'certificate-authority-data': cluster['certificate-authority-data'],
          config: cluster.extensions?.find((e: Doc) => e.name === 'client.authentication.k8s.io/exec')
            ?.extension,
        },
      },
    };
    return new Promise((resolve, reject) => {
      const child = spawn(process.execPath, [kit.plugin], {
        env: { ...kit.env, KUBERNETES_EXEC_INFO: JSON.stringify(info) },
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      child.on('close', (code) =>
        code === 0
          ? resolve((JSON.parse(stdout) as { status: { token: string } }).status.token)
          : reject(new Error(`cpsync credentials: ${stderr}`)),
      );
    });
  }

  /** The consumer creates a ConfigMap in the member: the HTTP status the member answers. */
  async function consumerCreates(cloud: keyof typeof AT_MEMBER, namespace = 'default'): Promise<number> {
    const profile = await memberProfile(cloud);
    const cluster = profile.status.accessProviders[0].cluster;
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromOptions({
      clusters: [{ name: 'member', server: cluster.server, caData: cluster['certificate-authority-data'] }],
      users: [{ name: 'consumer', token: await consumerToken(profile) }],
      contexts: [{ name: 'member', cluster: 'member', user: 'consumer' }],
      currentContext: 'member',
    });
    try {
      await kubeConfig.makeApiClient(CoreV1Api).createNamespacedConfigMap({
        namespace,
        body: { metadata: { generateName: `deployer-${cloud}-` }, data: { from: 'consumer' } },
      });
      return 201;
    } catch (error) {
      if (error instanceof ApiException) return error.code;
      throw error;
    }
  }
  const bindingOf = async (name: string) =>
    memberRbac.readClusterRoleBinding({ name }).catch((error: unknown) => {
      if (error instanceof ApiException && error.code === 404) return undefined;
      throw error;
    });

  /** refuses the consumer on every member before anything is granted (403) */
  const refusedBeforeAnyGrant = async () => {
    await sync({ projections: 'on' });
    for (const cloud of ['eks', 'gke', 'aks'] as const)
      assert.equal(await consumerCreates(cloud), 403, cloud);
    assert.ok((await profiles()).every((p) => condition(p) === undefined));
  };

  /** grants the consumer on every cluster of its namespace, marks each grant, says so on each profile, and lets the consumer in */
  const grantedMarkedAndProven = async () => {
    entries.refuse.add('us-east-1/payments');
    // The project has not let cpsync grant GKE's role yet: Google refuses, and the GKE grant is not made.
    const policyBefore = structuredClone(projectPolicy());
    const refused = await sync({ projections: 'on', accessGrants: 'on' });
    assert.match(refused.stderr, /grants: 2 granted, 0 revoked, 2 refused/);
    const gkeRefused = condition(await memberProfile('gke'));
    assert.deepEqual([gkeRefused?.status, gkeRefused?.reason], ['False', 'Refused']);
    assert.match(gkeRefused!.message, /Google refused cpsync's binding of roles\/container.clusterViewer/);
    assert.equal((await memberProfile('gke')).metadata.annotations['cpsync.io/access-grants'], undefined);
    assert.deepEqual(projectPolicy(), policyBefore, 'the project policy is as it was');
    assert.equal(await consumerCreates('gke'), 403);
    // The doctor names it, reading only.
    const sick = await runCli(['doctor', '--config', config], { env: emulators.env });
    captured.push(sick.stdout, sick.stderr);
    assert.equal(sick.code, 1, sick.stdout);
    assert.match(
      sick.stdout,
      new RegExp(
        `✖ access grants gke/${GCP_PROJECT}: cannot read the project's IAM policy \\(.*permission.*\\): GKE's project role for consumers needs Project IAM Admin limited to roles/container.clusterViewer`,
      ),
    );
    assert.deepEqual(projectPolicy(), policyBefore);

    // The project lets cpsync grant GKE's cluster viewer role, and no other (docs/configuring.md's binding).
    letCpsyncGrantInProject(emulators.gke, GCP_PROJECT);
    const policy = structuredClone(projectPolicy());
    const run = await sync({ projections: 'on', accessGrants: 'on' });
    assert.match(run.stderr, /grants: 1 granted, 0 revoked, 1 refused/);
    // Each grant is announced once on the bus, when it is made.
    assert.deepEqual(
      [...refused.access, ...run.access],
      [
        'Consumer Access Granted deployer aks/batch',
        'Consumer Access Granted deployer eks/checkout',
        'Consumer Access Granted deployer gke/edge',
      ],
    );
    // GKE: one binding of the project's policy, limited to GKE and marked as cpsync's; the others as they were.
    assert.deepEqual(cpsyncProjectBindings(), [
      {
        role: 'roles/container.clusterViewer',
        members: [`serviceAccount:${GOOGLE}`],
        condition: {
          title: 'cpsync consumer deployer',
          description: 'cpsync: access grant for consumer deployer',
          expression: 'resource.service == "container.googleapis.com"',
        },
      },
    ]);
    assert.equal(projectPolicy().version, 3, 'a policy with conditions is version 3');
    // Resource Manager briefly unavailable: the doctor's read of the policy is asked again, by the configuration's retries.
    const reads = () => emulators.gke.requests.filter((r) => r.path.endsWith(':getIamPolicy')).length;
    const readsBefore = reads();
    emulators.gke.iamFaults.push({
      method: 'getIamPolicy',
      fault: { status: 503, code: 'UNAVAILABLE', message: 'The service is currently unavailable.' },
    });
    const well = await runCli(['doctor', '--config', config], { env: emulators.env });
    assert.equal(reads() - readsBefore, 2, 'the refused read asked again once');
    captured.push(well.stdout, well.stderr);
    assert.match(
      well.stdout,
      new RegExp(`✔ access grants gke/${GCP_PROJECT}: .*roles/container.clusterViewer bindings: deployer`),
    );
    assert.deepEqual(
      projectPolicy().bindings!.filter((b) => !b.condition?.description?.startsWith('cpsync:')),
      policy.bindings,
    );
    // Each GKE and AKS member bounds what cpsync's identity writes there: its admission policy names it, as the
    // member knows it.
    assert.match(
      well.stdout,
      new RegExp(
        `✔ access grants member gke/${GCP_PROJECT}/${AT_MEMBER.gke}: bounded: the user "${emulators.gke.serviceAccountKey.client_email}" writes only cpsync's consumer bindings`,
      ),
    );
    assert.match(
      well.stdout,
      new RegExp(
        `✔ access grants member aks/${AZURE_SUBSCRIPTION}/${AT_MEMBER.aks}: bounded: the user "${emulators.arm.clientId}" writes only cpsync's consumer bindings`,
      ),
    );
    assert.doesNotMatch(well.stdout, /access grants member eks/, 'EKS grants are access entries');

    for (const cloud of ['eks', 'gke', 'aks'] as const) {
      const profile = await memberProfile(cloud);
      assert.deepEqual(
        [condition(profile)?.status, condition(profile)?.reason],
        ['True', 'Granted'],
        `${cloud}: ${JSON.stringify(condition(profile))}`,
      );
      assert.equal(await consumerCreates(cloud), 201, cloud);
    }
    // EKS: an access entry for the consumer's role, tagged as cpsync's, with the edit policy at cluster scope.
    const entry = entries.of('us-east-1', AT_MEMBER.eks).get(ROLE)!;
    assert.deepEqual(entry.tags, {
      'app.kubernetes.io/managed-by': 'cpsync',
      'cpsync.io/consumer': 'deployer',
    });
    assert.deepEqual(
      entry.policies.map((p) => [p.policyArn, p.accessScope.type]),
      [['arn:aws:eks::aws:cluster-access-policy/AmazonEKSEditPolicy', 'cluster']],
    );
    // GKE and AKS: one binding on the member, labelled as cpsync's, of both identities to `edit`.
    const binding = (await bindingOf('cpsync:consumer:deployer'))!;
    assert.equal(binding.roleRef.name, 'edit');
    assert.equal(binding.metadata?.labels?.['app.kubernetes.io/managed-by'], 'cpsync');
    assert.deepEqual(binding.subjects?.map((s) => s.name).sort(), [ENTRA, GOOGLE].sort());

    // The refused grant: the profile says why, and nothing else of it or of the cloud changed.
    const payments = (await profiles()).find(
      (p) => p.spec.displayName === 'payments' && p.metadata.labels['cpsync.io/provider'] === 'eks',
    )!;
    assert.deepEqual([condition(payments)?.status, condition(payments)?.reason], ['False', 'Refused']);
    assert.match(condition(payments)!.message, /AccessDenied|not authorized/);
    assert.equal(entries.of('us-east-1', 'payments').size, 0);
    assert.equal(payments.metadata.annotations['cpsync.io/access-grants'], undefined);
    // Clusters whose member cannot be reached say so.
    const unreachable = (await profiles()).filter((p) => condition(p)?.reason === 'MemberUnreachable');
    assert.deepEqual(unreachable.map((p) => p.spec.displayName).sort(), ['analytics', 'web']);

    // The record: the identity granted, the same on every profile of the cluster.
    const eks = await memberProfile('eks');
    assert.deepEqual(JSON.parse(eks.metadata.annotations['cpsync.io/access-grants']), {
      deployer: { identity: ROLE, level: 'edit' },
    });
    const own = (
      (await objects.listNamespacedCustomObject({ ...GROUP, namespace })) as { items: Doc[] }
    ).items.find(
      (p) =>
        p.metadata.annotations['cpsync.io/provider-id'] === eks.metadata.annotations['cpsync.io/provider-id'],
    )!;
    assert.equal(
      own.metadata.annotations['cpsync.io/access-grants'],
      eks.metadata.annotations['cpsync.io/access-grants'],
    );
    // A consumer's condition is on the profiles of its namespace only.
    assert.equal(condition(own), undefined);
  };

  /** an unchanged run grants nothing again and writes nothing; a dry run lists what it would grant */
  const unchangedAndDryRun = async () => {
    const before = new Map((await profiles()).map((p) => [p.metadata.name, p.metadata.resourceVersion]));
    const again = await sync({ projections: 'on', accessGrants: 'on' });
    assert.match(again.stderr, /grants: 0 granted, 0 revoked, 1 refused/);
    assert.deepEqual(again.access, [], 'nothing granted, nothing announced');
    assert.deepEqual(
      new Map((await profiles()).map((p) => [p.metadata.name, p.metadata.resourceVersion])),
      before,
    );
    // One cloud only (`--provider gke`): its grants hold as they are, GKE's project role with them.
    const gkeOnly = await sync({ projections: 'on', accessGrants: 'on' }, ['--provider', 'gke']);
    assert.match(gkeOnly.stderr, /grants: 0 granted, 0 revoked/);
    assert.deepEqual(gkeOnly.access, []);
    assert.deepEqual(
      new Map((await profiles()).map((p) => [p.metadata.name, p.metadata.resourceVersion])),
      before,
    );
    assert.deepEqual(
      cpsyncProjectBindings().map((b) => b.members),
      [[`serviceAccount:${GOOGLE}`]],
    );

    document.consumers.push({
      name: 'auditor',
      namespaces: [consumers],
      level: 'view',
      identities: { eks: { roleArn: `arn:aws:iam::${EKS_ACCOUNT}:role/auditor` } },
    });
    try {
      const dry = await sync({ projections: 'on', accessGrants: 'on' }, ['--dry-run']);
      const lines = dry.stdout.split('\n').filter((l) => l.trim().startsWith('grant auditor'));
      assert.equal(lines.length, 2, dry.stdout);
      assert.equal(
        entries.of('us-east-1', AT_MEMBER.eks).has(`arn:aws:iam::${EKS_ACCOUNT}:role/auditor`),
        false,
      );
    } finally {
      document.consumers.pop();
    }
  };

  /** Two runs at once (the schedule and a cloud event, say): each grant is made and announced once. */
  const twoAtOnce = async () => {
    const auditor = `arn:aws:iam::${EKS_ACCOUNT}:role/auditor`;
    const auditorGoogle = 'auditor@consumers.iam.gserviceaccount.com';
    document.consumers.push({
      name: 'auditor',
      namespaces: [consumers],
      level: 'view',
      identities: { eks: { roleArn: auditor }, gke: { principal: auditorGoogle } },
    });
    try {
      writeFileSync(config, stringify({ ...document, features: { projections: 'on', accessGrants: 'on' } }));
      writeFileSync(document.bus.jsonl, '');
      const runs = await Promise.all(
        [1, 2].map(() => runCli(['sync', '--config', config], { env: emulators.env })),
      );
      captured.push(readFileSync(document.bus.jsonl, 'utf8'));
      for (const run of runs) {
        captured.push(run.stdout, run.stderr);
        assert.equal(run.code, 0, run.stderr);
      }
      assert.deepEqual(
        accessEvents().filter((e) => e.includes(' auditor ')),
        ['Consumer Access Granted auditor eks/checkout', 'Consumer Access Granted auditor gke/edge'],
      );
      assert.ok(entries.of('us-east-1', AT_MEMBER.eks).has(auditor));
      assert.deepEqual(
        cpsyncProjectBindings().map((b) => [b.condition?.title, b.members]),
        [
          ['cpsync consumer auditor', [`serviceAccount:${auditorGoogle}`]],
          ['cpsync consumer deployer', [`serviceAccount:${GOOGLE}`]],
        ],
      );
    } finally {
      document.consumers.pop();
    }
    // The consumer removed from the configuration: exactly its grants go, its project binding too.
    const removed = await sync({ projections: 'on', accessGrants: 'on' });
    assert.deepEqual(removed.access, [
      'Consumer Access Revoked auditor eks/checkout',
      'Consumer Access Revoked auditor gke/edge',
    ]);
    assert.equal(entries.of('us-east-1', AT_MEMBER.eks).has(auditor), false);
    assert.deepEqual(
      cpsyncProjectBindings().map((b) => b.condition?.title),
      ['cpsync consumer deployer'],
    );
  };

  /**
   * SIGTERM while a grant is in flight (its access entry asked for): the run stops (143); the next run finds
   * the entry by its marks, records it and announces it; across both runs the grant is announced once. The run
   * killed syncs the EKS scope of that grant only: a look cut short keeps what it recorded ahead named (cpsync
   * cannot tell what it reached), and web's member, which refuses every connection, is left out of it, so that
   * whether the signal lands before or after web's own look ends never changes what the turn-off finds there.
   */
  const killedMidGrant = async () => {
    const oncall = `arn:aws:iam::${EKS_ACCOUNT}:role/oncall`;
    document.consumers.push({
      name: 'oncall',
      namespaces: [consumers],
      level: 'view',
      identities: { eks: { roleArn: oncall } },
    });
    try {
      writeFileSync(config, stringify({ ...document, features: { projections: 'on', accessGrants: 'on' } }));
      writeFileSync(document.bus.jsonl, '');
      let watch: NodeJS.Timeout | undefined;
      const killed = await runCli(['sync', '--config', config, '--scope', `eks/${EKS_ACCOUNT}/us-east-1`], {
        env: emulators.env,
        started: (child) => {
          watch = setInterval(() => {
            const asked = emulators.proxy.calls.some(
              (c) => c.method === 'POST' && c.path.endsWith('/access-entries') && c.body.includes(oncall),
            );
            if (!asked) return;
            clearInterval(watch);
            child.kill('SIGTERM');
          }, 2);
        },
      });
      clearInterval(watch);
      captured.push(killed.stdout, killed.stderr);
      assert.equal(killed.code, 143, `signal ${killed.signal}: ${killed.stderr}`);
      const next = await runCli(['sync', '--config', config], { env: emulators.env });
      captured.push(next.stdout, next.stderr, readFileSync(document.bus.jsonl, 'utf8'));
      assert.equal(next.code, 0, next.stderr);
      assert.deepEqual(
        accessEvents().filter((e) => e.includes(' oncall ')),
        ['Consumer Access Granted oncall eks/checkout'],
        'announced once across the killed run and the next',
      );
      assert.deepEqual(entries.of('us-east-1', AT_MEMBER.eks).get(oncall)?.tags, {
        'app.kubernetes.io/managed-by': 'cpsync',
        'cpsync.io/consumer': 'oncall',
      });
      assert.deepEqual(
        JSON.parse((await memberProfile('eks')).metadata.annotations['cpsync.io/access-grants']).oncall,
        { identity: oncall, level: 'view' },
      );
    } finally {
      document.consumers.pop();
    }
    const removed = await sync({ projections: 'on', accessGrants: 'on' });
    assert.deepEqual(removed.access, ['Consumer Access Revoked oncall eks/checkout']);
    assert.equal(entries.of('us-east-1', AT_MEMBER.eks).has(oncall), false);
  };

  /**
   * The clouds' events, through the webhook function as deployed (built on demand): a GKE Pub/Sub push and an
   * Azure Event Grid event each sync their one cluster, which grants a newly configured consumer there (GKE's
   * project role included) and nowhere else; the next full sync without it revokes exactly that.
   */
  const cloudEvents = async () => {
    const objectId = '0b7e3c1d-2f4a-4b5c-8d6e-7f8091a2b3c4';
    const releasesGoogle = 'releases@consumers.iam.gserviceaccount.com';
    document.consumers.push({
      name: 'releases',
      namespaces: [consumers],
      level: 'view',
      identities: { gke: { principal: releasesGoogle }, aks: { objectId } },
    });
    const signer = await startGoogleSigner(AUDIENCE, PUSHER);
    const keyFile = join(emulators.directory, 'event-grid-key');
    writeFileSync(keyFile, EVENT_GRID_KEY);
    let deps: FunctionDeps | undefined;
    try {
      writeFileSync(document.bus.jsonl, '');
      deps = await compose(
        parseConfig(
          {
            ...document,
            features: { projections: 'on', accessGrants: 'on' },
            webhook: {
              azure: { key: { file: keyFile } },
              gcp: { audience: AUDIENCE, serviceAccountEmail: PUSHER, jwksUri: signer.jwksUri },
            },
          },
          'grants webhook',
        ),
        ALL_PROVIDERS,
        { onDemand: true },
      );
      const webhook = makeWebhook(async () => deps!);
      const edge = emulators.gke.clusters.get(GCP_PROJECT)!.find((c) => c.name === AT_MEMBER.gke)!;
      const pushed = await webhook(
        functionUrlRequest(
          '/gcp',
          pubSubPush(
            gkeAuditEntry(
              GCP_PROJECT,
              'google.container.v1.ClusterManager.UpdateCluster',
              `projects/${GCP_PROJECT}/locations/${edge.location}/clusters/${edge.name}`,
            ),
            'ps-grants',
          ),
          { authorization: `Bearer ${await signer.sign({})}` },
        ),
        lambdaContext('cpsync-webhook'),
      );
      assert.equal(pushed.statusCode, 200, pushed.body as string);
      const aks = batch().id;
      const written = await webhook(
        functionUrlRequest(
          '/azure',
          [eventGridEvent('Microsoft.Resources.ResourceWriteSuccess', aks, 'eg-grants')],
          {},
          { key: EVENT_GRID_KEY },
        ),
        lambdaContext('cpsync-webhook'),
      );
      assert.equal(written.statusCode, 200, written.body as string);
      captured.push(readFileSync(document.bus.jsonl, 'utf8'));
      assert.deepEqual(
        accessEvents(),
        ['Consumer Access Granted releases aks/batch', 'Consumer Access Granted releases gke/edge'],
        'granted on the two clusters the events named, and announced once each',
      );
      for (const cloud of ['gke', 'aks'] as const) {
        const releases = condition(await memberProfile(cloud), 'consumers.cpsync.io/releases');
        assert.deepEqual([releases?.status, releases?.reason], ['True', 'Granted'], cloud);
      }
      assert.ok(
        (await profiles())
          .filter((p) => !['edge', 'batch'].includes(p.spec.displayName))
          .every((p) => condition(p, 'consumers.cpsync.io/releases') === undefined),
        'no other cluster was looked at',
      );
      assert.ok(
        cpsyncProjectBindings().some(
          (b) =>
            b.condition?.title === 'cpsync consumer releases' &&
            b.members.includes(`serviceAccount:${releasesGoogle}`),
        ),
      );
      assert.ok(
        [...emulators.arm.roleAssignments.values()].some((a) => a.properties.principalId === objectId),
        'AKS with Azure RBAC: a role assignment',
      );
      // The project takes cpsync's Project IAM Admin away: an event's sync of the cluster keeps what it holds,
      // says Refused, and names the project it cannot settle among its problems (which the functions log).
      const policy = projectPolicy();
      const admin = policy.bindings!.filter((b) => b.role === PROJECT_IAM_ADMIN);
      policy.bindings = policy.bindings!.filter((b) => b.role !== PROJECT_IAM_ADMIN);
      try {
        const report = await syncCluster(deps.ports, {
          syncId: 'grants-refused',
          ref: {
            scope: { provider: 'gke', account: GCP_PROJECT, region: ALL_REGIONS },
            name: edge.name,
            location: edge.location,
          },
          ...deps.settings,
        });
        assert.match(
          (report.problems ?? []).join('\n'),
          new RegExp(`cannot settle project ${GCP_PROJECT}'s cloud role for consumers: .*permission`),
        );
        const refused = condition(await memberProfile('gke'), 'consumers.cpsync.io/releases');
        assert.deepEqual([refused?.status, refused?.reason], ['False', 'Refused']);
        assert.ok(
          cpsyncProjectBindings().some((b) => b.condition?.title === 'cpsync consumer releases'),
          'the policy as it was',
        );
      } finally {
        policy.bindings!.push(...admin);
      }
    } finally {
      document.consumers.pop();
      await deps?.close();
      await signer.stop();
    }
    const removed = await sync({ projections: 'on', accessGrants: 'on' });
    assert.deepEqual(removed.access, [
      'Consumer Access Revoked releases aks/batch',
      'Consumer Access Revoked releases gke/edge',
    ]);
    assert.deepEqual(
      cpsyncProjectBindings().map((b) => b.condition?.title),
      ['cpsync consumer deployer'],
    );
    assert.ok(
      ![...emulators.arm.roleAssignments.values()].some((a) => a.properties.principalId === objectId),
    );
  };

  /** A cluster the cloud is still creating is granted at the follow-up look that finds it ready. */
  const followedUntilReady = async () => {
    await createEksClusters(emulators.moto.endpoint, EKS_ACCOUNT, 'us-east-1', [{ name: 'rollout' }]);
    // Held until the run has seen it in change; the follow's looks find it ready.
    const held = holdTransition(emulators, 'eks', 'rollout', 'creating');
    try {
      const run = await sync({ projections: 'on', accessGrants: 'on' }, ['--follow'], 0, (text) => {
        if (text.includes('following 1 cluster')) held.settle();
      });
      assert.match(run.stderr, /following 1 cluster\(s\) the clouds are still changing: eks\/\S+\/rollout/);
      assert.match(run.stderr, /rollout: settled \(updated\) after \d+ s/);
      assert.deepEqual(run.access, ['Consumer Access Granted deployer eks/rollout']);
    } finally {
      held.settle();
    }
    const rollout = (await profiles()).find((p) => p.spec.displayName === 'rollout')!;
    assert.deepEqual([condition(rollout)?.status, condition(rollout)?.reason], ['True', 'Granted']);
    assert.ok(entries.of('us-east-1', 'rollout').has(ROLE));
  };

  /** Narrowed to member namespaces: EKS's policy scoped to them, RoleBindings there instead of the cluster's. */
  const narrowedToNamespaces = async () => {
    const memberConfig = new KubeConfig();
    memberConfig.loadFromFile(member.kubeconfig);
    await memberConfig.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: 'apps' } } });
    document.consumers[0].memberNamespaces = ['apps', 'absent'];
    const first = await sync({ projections: 'on', accessGrants: 'on' });
    // EKS takes the new scope (its namespaces need not exist); each grant made on new terms is announced.
    assert.deepEqual(first.access, [
      'Consumer Access Granted deployer eks/checkout',
      'Consumer Access Granted deployer eks/rollout',
    ]);
    for (const cloud of ['gke', 'aks'] as const)
      assert.deepEqual(
        [condition(await memberProfile(cloud))?.status, condition(await memberProfile(cloud))?.reason],
        ['False', 'NamespaceMissing'],
        cloud,
      );
    // What the member has is bound on the new terms, and the cluster-wide binding of the terms before is gone: a
    // namespace the member lacks never keeps the consumer's wider access.
    assert.equal(await bindingOf('cpsync:consumer:deployer'), undefined, 'the cluster-wide binding is gone');
    for (const cloud of ['gke', 'aks'] as const) {
      assert.equal(await consumerCreates(cloud, 'apps'), 201, cloud);
      assert.equal(await consumerCreates(cloud, 'default'), 403, cloud);
    }
    document.consumers[0].memberNamespaces = ['apps'];
    const narrowed = await sync({ projections: 'on', accessGrants: 'on' });
    assert.match(narrowed.stderr, /grants: 4 granted, 0 revoked/);
    assert.deepEqual(narrowed.access, [
      'Consumer Access Granted deployer aks/batch',
      'Consumer Access Granted deployer eks/checkout',
      'Consumer Access Granted deployer eks/rollout',
      'Consumer Access Granted deployer gke/edge',
    ]);
    for (const cloud of ['eks', 'gke', 'aks'] as const) {
      assert.equal(condition(await memberProfile(cloud))?.status, 'True', cloud);
      assert.equal(await consumerCreates(cloud, 'apps'), 201, cloud);
      assert.equal(await consumerCreates(cloud, 'default'), 403, cloud);
    }
    assert.deepEqual(
      entries
        .of('us-east-1', AT_MEMBER.eks)
        .get(ROLE)!
        .policies.map((p) => p.accessScope),
      [{ type: 'namespace', namespaces: ['apps'] }],
    );
    assert.equal(await bindingOf('cpsync:consumer:deployer'), undefined, 'no cluster-wide binding left');
    const scoped = await memberRbac.readNamespacedRoleBinding({
      name: 'cpsync:consumer:deployer',
      namespace: 'apps',
    });
    assert.deepEqual(scoped.subjects?.map((s) => s.name).sort(), [ENTRA, GOOGLE].sort());
  };

  /** An AKS cluster that uses Azure RBAC: an Azure role assignment instead of a Kubernetes binding. */
  const azureRbacOnAks = async () => {
    azureRbac = true;
    batch().properties.aadProfile = { managed: true, enableAzureRBAC: true };
    const run = await sync({ projections: 'on', accessGrants: 'on' });
    assert.match(run.stderr, /grants: 0 granted, 0 revoked/);
    const assignments = [...emulators.arm.roleAssignments.values()];
    assert.deepEqual(
      assignments.map((a) => [
        a.properties.scope.toLowerCase(),
        a.properties.principalId,
        a.properties.roleDefinitionId.split('/').pop(),
        a.properties.description,
      ]),
      [
        [
          `${batch().id}/namespaces/apps`.toLowerCase(),
          ENTRA,
          'a7ffa36f-339b-4b5c-8bdf-e2c188b2c0eb', // Azure Kubernetes Service RBAC Writer: the edit level
          'cpsync: access grant for consumer deployer',
        ],
      ],
    );
    // The Entra identity is out of cpsync's Kubernetes binding; the Google one stays.
    const scoped = await memberRbac.readNamespacedRoleBinding({
      name: 'cpsync:consumer:deployer',
      namespace: 'apps',
    });
    assert.deepEqual(
      scoped.subjects?.map((s) => s.name),
      [GOOGLE],
    );
    const aks = condition(await memberProfile('aks'));
    assert.deepEqual([aks?.status, aks?.reason], ['True', 'Granted']);
    assert.match(aks!.message, /Azure RBAC role for edit/);
    assert.equal(await consumerCreates('aks', 'apps'), 201);
  };

  /**
   * What another writer puts on the hub changes nothing cpsync grants (its record is its own ledger, never the
   * hub): the record on one profile edited to another identity, on another deleted, and one forged on a profile
   * of a cluster nothing is granted on — nothing is granted, revoked or announced, GKE's project role names the
   * configured consumer only, and each profile shows the ledger's record again.
   */
  const hubEditsChangeNothing = async () => {
    const MERGE = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
    const shown = async (profile: Doc, value: string | null) =>
      objects.patchNamespacedCustomObject(
        {
          ...GROUP,
          namespace: profile.metadata.namespace,
          name: profile.metadata.name,
          body: { metadata: { annotations: { 'cpsync.io/access-grants': value } } },
        },
        MERGE,
      );
    const eks = await memberProfile('eks');
    const record = eks.metadata.annotations['cpsync.io/access-grants'];
    const intruder = `arn:aws:iam::${EKS_ACCOUNT}:role/intruder`;
    const intruderGoogle = 'intruder@elsewhere.iam.gserviceaccount.com';
    await shown(eks, JSON.stringify({ deployer: { identity: intruder, level: 'admin' } }));
    await shown(await memberProfile('gke'), null);
    const analytics = (await profiles()).find((p) => p.spec.displayName === 'analytics')!;
    await shown(analytics, JSON.stringify({ intruder: { identity: intruderGoogle, level: 'admin' } }));
    // A member's server on the hub pointed elsewhere, in every profile of it: the doctor reaches each member where
    // its cloud says, never where a profile points (cpsync's token would go there).
    const gke = await memberProfile('gke');
    const server = gke.status.accessProviders[0].cluster.server;
    const copies = (
      (await objects.listClusterCustomObject({ ...GROUP, labelSelector: 'cpsync.io/provider=gke' })) as {
        items: Doc[];
      }
    ).items.filter(
      // This estate's own namespaces: other tests' estates on the shared hub have an `edge` too.
      (p) => p.spec.displayName === AT_MEMBER.gke && [namespace, consumers].includes(p.metadata.namespace),
    );
    assert.equal(copies.length, 2, 'the member has a profile in its own namespace and the consumer’s');
    let reached = 0;
    const elsewhere = createServer((socket) => {
      reached += 1;
      socket.destroy();
    });
    await new Promise<void>((resolve) => elsewhere.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = elsewhere.address() as { port: number };
      for (const copy of copies)
        await objects.patchNamespacedCustomObjectStatus(
          {
            ...GROUP,
            namespace: copy.metadata.namespace,
            name: copy.metadata.name,
            body: {
              status: {
                accessProviders: copy.status.accessProviders.map((a: Doc) => ({
                  ...a,
                  cluster: { ...a.cluster, server: `https://127.0.0.1:${port}` },
                })),
              },
            },
          },
          MERGE,
        );
      const doctor = await runCli(['doctor', '--config', config], { env: emulators.env });
      captured.push(doctor.stdout, doctor.stderr);
      assert.equal(reached, 0, 'nothing reached where the hub pointed');
      assert.match(
        doctor.stdout,
        new RegExp(`✔ access grants member gke/${GCP_PROJECT}/${AT_MEMBER.gke}: bounded`),
      );
    } finally {
      await new Promise((resolve) => elsewhere.close(resolve));
    }
    const bindings = structuredClone(cpsyncProjectBindings());
    const run = await sync({ projections: 'on', accessGrants: 'on' });
    assert.match(run.stderr, /grants: 0 granted, 0 revoked/);
    for (const copy of copies) {
      const again = await objects.getNamespacedCustomObject({
        ...GROUP,
        namespace: copy.metadata.namespace,
        name: copy.metadata.name,
      });
      assert.equal(
        (again as Doc).status.accessProviders[0].cluster.server,
        server,
        `${copy.metadata.namespace}: the member's server as its cloud says, again`,
      );
    }
    assert.deepEqual(run.access, [], 'nothing granted or revoked for what the hub said');
    assert.deepEqual(cpsyncProjectBindings(), bindings, "GKE's project role as it was");
    assert.ok(!JSON.stringify(projectPolicy()).includes(intruderGoogle));
    assert.equal(entries.of('us-east-1', AT_MEMBER.eks).has(intruder), false);
    assert.equal((await memberProfile('eks')).metadata.annotations['cpsync.io/access-grants'], record);
    assert.ok((await memberProfile('gke')).metadata.annotations['cpsync.io/access-grants']);
    assert.equal(
      (await profiles()).find((p) => p.spec.displayName === 'analytics')!.metadata.annotations[
        'cpsync.io/access-grants'
      ],
      undefined,
      'the forged record is gone',
    );
  };

  /**
   * A cluster whose every name in the consumer's namespace another writer took first (profiles of another
   * manager): cpsync writes no profile of it there, so grants nothing on it for that consumer; once the names
   * are free, its profile is written and the grant made. Granted, then kept from its profile (held terminating,
   * then squatted), it keeps the grant: the hub never decides what cpsync takes back.
   */
  const squattedNames = async () => {
    await createEksClusters(emulators.moto.endpoint, EKS_ACCOUNT, 'us-east-1', [{ name: 'squatted' }]);
    const providerId = `arn:aws:eks:us-east-1:${EKS_ACCOUNT}:cluster/squatted`;
    const names = PROFILE_NAMES.candidates('cpsync', { provider: 'eks', providerId, name: 'squatted' });
    /** Every name the cluster's profile may have in the consumer's namespace, taken by another manager's profile. */
    const squat = async () => {
      for (const name of names)
        await objects.createNamespacedCustomObject({
          ...GROUP,
          namespace: consumers,
          body: {
            apiVersion: 'multicluster.x-k8s.io/v1alpha1',
            kind: 'ClusterProfile',
            metadata: { name, labels: { 'x-k8s.io/cluster-manager': 'squatter' } },
            spec: { displayName: 'squatted', clusterManager: { name: 'squatter' } },
          },
        });
    };
    await squat();
    const squatted = await sync({ projections: 'on', accessGrants: 'on' }, [], 1);
    assert.match(
      squatted.stderr,
      /name collision: .*held by a profile of another manager \("squatter"\), which that name was not made for: .*cluster\/squatted is not written under another name in/,
    );
    assert.ok(!squatted.access.some((a) => a.includes('eks/squatted')), 'no grant: no profile there');
    assert.equal(entries.of('us-east-1', 'squatted').size, 0);
    for (const name of names)
      await objects.deleteNamespacedCustomObject({ ...GROUP, namespace: consumers, name });
    const freed = await sync({ projections: 'on', accessGrants: 'on' });
    assert.deepEqual(
      freed.access.filter((a) => a.includes('eks/squatted')),
      ['Consumer Access Granted deployer eks/squatted'],
    );
    assert.ok(entries.of('us-east-1', 'squatted').has(ROLE));

    // Granted, its profile then deleted by someone whose finalizer holds it (terminating), and after that every
    // name squatted: cpsync writes no profile of it, and takes nothing back for the hub's sake.
    const MERGE = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
    const own = (await profiles()).find(
      (p) => p.spec.displayName === 'squatted' && p.metadata.labels['x-k8s.io/cluster-manager'] === 'cpsync',
    )!;
    const at = { ...GROUP, namespace: consumers, name: own.metadata.name };
    await objects.patchNamespacedCustomObject(
      { ...at, body: { metadata: { finalizers: ['example.com/hold'] } } },
      MERGE,
    );
    await objects.deleteNamespacedCustomObject(at);
    const held = await sync({ projections: 'on', accessGrants: 'on' });
    assert.deepEqual(
      held.access.filter((a) => a.includes('eks/squatted')),
      [],
      'nothing revoked for a profile someone is deleting',
    );
    assert.ok(entries.of('us-east-1', 'squatted').has(ROLE), 'still granted');
    await objects.patchNamespacedCustomObject({ ...at, body: { metadata: { finalizers: null } } }, MERGE);
    await until(
      async () =>
        !(await profiles()).some(
          (p) => p.metadata.name === own.metadata.name && p.spec.displayName === 'squatted',
        ),
      'the held profile is gone once its finalizer is',
    );
    await squat();
    const squattedAgain = await sync({ projections: 'on', accessGrants: 'on' }, [], 1);
    assert.match(
      squattedAgain.stderr,
      /name collision: .*held by a profile of another manager \("squatter"\), which that name was not made for: .*cluster\/squatted is not written under another name in/,
    );
    assert.deepEqual(
      squattedAgain.access.filter((a) => a.includes('eks/squatted')),
      [],
      'nothing revoked for names squatted',
    );
    assert.ok(entries.of('us-east-1', 'squatted').has(ROLE), 'still granted');
    for (const name of names)
      await objects.deleteNamespacedCustomObject({ ...GROUP, namespace: consumers, name });
    const freedAgain = await sync({ projections: 'on', accessGrants: 'on' });
    assert.deepEqual(
      freedAgain.access.filter((a) => a.includes('eks/squatted')),
      [],
    );
    assert.ok(
      (await profiles()).some(
        (p) =>
          p.spec.displayName === 'squatted' && p.metadata.labels['x-k8s.io/cluster-manager'] === 'cpsync',
      ),
      'its profile written again',
    );
    assert.ok(entries.of('us-east-1', 'squatted').has(ROLE));
  };

  /**
   * The hub wiped (every profile deleted) and a record lost from the ledger before the turn-off: what the
   * ledger still names is taken back from it, what it no longer names is found by the turn-off's scan of
   * cpsync's marks. (Run by the turn-off below.)
   */
  const wipeHubAndLoseARecord = async () => {
    for (const ns of [namespace, consumers]) {
      const { items } = (await objects.listNamespacedCustomObject({ ...GROUP, namespace: ns })) as {
        items: Doc[];
      };
      for (const p of items)
        if (p.metadata.labels?.['x-k8s.io/cluster-manager'] === 'cpsync')
          await objects.deleteNamespacedCustomObject({ ...GROUP, namespace: ns, name: p.metadata.name });
    }
    const ledger = new FileGrantLedger(document.outbox.directory);
    const records = await ledger.read({ provider: 'eks', account: EKS_ACCOUNT });
    const checkout = records.find((r) => r.providerId.endsWith(`cluster/${AT_MEMBER.eks}`))!;
    assert.ok(checkout.grants.length > 0, 'the record lost names grants');
    await ledger.write([], [checkout]);
  };

  /** leaves grants it did not make, and turned off revokes exactly its own: the consumer is refused again */
  const foreignKeptOwnRevoked = async () => {
    // Someone grants another consumer by hand: an access entry and a binding cpsync did not make.
    entries.put(
      'us-east-1',
      AT_MEMBER.eks,
      FOREIGN_ROLE,
      'arn:aws:eks::aws:cluster-access-policy/AmazonEKSViewPolicy',
    );
    await memberRbac.createClusterRoleBinding({
      body: {
        metadata: { name: 'cpsync:consumer:viewer' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'view' },
        subjects: [
          {
            apiGroup: 'rbac.authorization.k8s.io',
            kind: 'User',
            name: FOREIGN_GOOGLE,
          },
        ],
      },
    });
    document.consumers.push({
      name: 'viewer',
      namespaces: [consumers],
      level: 'view',
      identities: {
        eks: { roleArn: FOREIGN_ROLE },
        gke: { principal: FOREIGN_GOOGLE },
      },
    });
    const withViewer = await sync({ projections: 'on', accessGrants: 'on' });
    // Where no one granted it (the cluster created since), cpsync does; where EKS refuses, nothing.
    assert.match(withViewer.stderr, /grants: 2 granted, 0 revoked, 2 refused/);
    assert.deepEqual(withViewer.access, [
      'Consumer Access Granted viewer eks/rollout',
      'Consumer Access Granted viewer eks/squatted',
    ]);
    for (const cloud of ['eks', 'gke'] as const) {
      const viewer = condition(await memberProfile(cloud), 'consumers.cpsync.io/viewer');
      assert.deepEqual([viewer?.status, viewer?.reason], ['True', 'GrantedElsewhere'], cloud);
    }
    assert.deepEqual(
      JSON.parse((await memberProfile('eks')).metadata.annotations['cpsync.io/access-grants']),
      {
        deployer: { identity: ROLE, level: 'edit', memberNamespaces: ['apps'] },
      },
    );

    // Turned off in one GKE region first (`--scope`): that cluster's grant goes; the project's role stays, as a
    // region cannot see every cluster of the project; nothing of the other clouds changes.
    const regional = await sync({ projections: 'on', accessGrants: 'off' }, [
      '--scope',
      `gke/${GCP_PROJECT}/europe-west1`,
    ]);
    assert.deepEqual(regional.access, ['Consumer Access Revoked deployer gke/edge']);
    assert.equal(await consumerCreates('gke', 'apps'), 403);
    assert.deepEqual(
      cpsyncProjectBindings().map((b) => b.members),
      [[`serviceAccount:${GOOGLE}`]],
    );
    assert.equal(await consumerCreates('eks', 'apps'), 201, 'EKS is not in the scope');
    assert.ok(entries.of('us-east-1', AT_MEMBER.eks).has(ROLE));

    await wipeHubAndLoseARecord();
    const off = await sync({ projections: 'on', accessGrants: 'off' });
    assert.match(off.stderr, /grants: 0 granted, 6 revoked/);
    assert.deepEqual(off.access, [
      'Consumer Access Revoked deployer aks/batch',
      'Consumer Access Revoked deployer eks/checkout',
      'Consumer Access Revoked deployer eks/rollout',
      'Consumer Access Revoked deployer eks/squatted',
      'Consumer Access Revoked viewer eks/rollout',
      'Consumer Access Revoked viewer eks/squatted',
    ]);
    assert.equal(
      await memberRbac
        .readNamespacedRoleBinding({ name: 'cpsync:consumer:deployer', namespace: 'apps' })
        .catch(() => undefined),
      undefined,
    );
    for (const cloud of ['eks', 'gke', 'aks'] as const)
      assert.equal(await consumerCreates(cloud), 403, cloud);
    assert.match(off.stderr, new RegExp(`revoked serviceAccount:${GOOGLE} roles/container.clusterViewer`));
    assert.deepEqual(cpsyncProjectBindings(), [], "cpsync's project binding is gone");
    assert.ok(
      projectPolicy().bindings!.some(
        (b) =>
          b.role === 'roles/container.clusterViewer' &&
          b.members.includes(`serviceAccount:${FOREIGN_GOOGLE}`),
      ),
      'the viewer role someone granted by hand is kept',
    );
    assert.equal(entries.of('us-east-1', AT_MEMBER.eks).has(ROLE), false);
    assert.equal(await bindingOf('cpsync:consumer:deployer'), undefined);
    assert.equal(emulators.arm.roleAssignments.size, 0, 'the Azure role assignment too');
    // What cpsync did not make is still there.
    assert.ok(entries.of('us-east-1', AT_MEMBER.eks).has(FOREIGN_ROLE));
    assert.ok(await bindingOf('cpsync:consumer:viewer'));
    // Nothing of the feature is left on the hub.
    for (const profile of await profiles()) {
      assert.equal(profile.metadata.annotations['cpsync.io/access-grants'], undefined);
      assert.ok(!profile.status.conditions.some((c: Doc) => c.type.startsWith('consumers.cpsync.io/')));
    }
    // Two clusters' members were never reachable. Nothing listens at web's address: nothing ever reached it, the
    // ledger names nothing there, and the turn-off takes it as holding nothing of cpsync's, named. analytics'
    // member cuts every connection unanswered (cpsync cannot tell whether a grant reached it), so its grant
    // stays recorded and the feature reads turning-off until it can be taken back; nothing else is done.
    assert.match(
      off.stderr,
      /not scanned for cpsync's grants \(the member cannot be reached, and nothing is recorded there\): .*web/,
    );
    const quiet = await sync({ projections: 'on', accessGrants: 'off' });
    assert.match(quiet.stderr, /grants: 0 granted, 0 revoked/);
    assert.match(quiet.stderr, /accessGrants turning-off \(1 profile /);
    assert.deepEqual(quiet.access, []);
  };

  /** Nothing the runs showed carries a credential: the estate's, the hub's, or a token a member was shown. */
  const leaksNothing = async () => {
    captured.push(JSON.stringify(await profiles()));
    const all = await assertNoCredentials(captured, emulators);
    assert.match(all, /Consumer Access Granted/);
    assert.ok(member.reviews.length > 10, 'tokens to look for');
    for (const { kind, token } of member.reviews.filter((r) => r.token.length > 20))
      assert.ok(!all.includes(token), `a ${kind} token leaked`);
  };

  // One lifecycle, in order: the end-to-end cases run in a random order, so its steps are one case.
  it("refuses the consumer before any grant; grants, marks and proves each; changes nothing unchanged (one cloud only, too); lists a dry run's grants; grants once from two runs at once, and revokes a consumer removed; finishes and announces once a grant a SIGTERM cut short; grants a cluster still being created once a follow-up look finds it ready; narrows to member namespaces; uses an Azure role assignment where AKS authorizes with Azure RBAC; grants from the webhook's GKE and Azure events; grants and revokes nothing for records edited, deleted or forged on the hub; grants nothing where every name of a cluster is squatted; leaves foreign grants; turned off in one scope, then everywhere — the hub wiped and a ledger record lost first — takes back exactly its own; leaks no credential", async () => {
    await refusedBeforeAnyGrant();
    await grantedMarkedAndProven();
    await unchangedAndDryRun();
    await twoAtOnce();
    await killedMidGrant();
    await followedUntilReady();
    await narrowedToNamespaces();
    await azureRbacOnAks();
    await cloudEvents();
    await hubEditsChangeNothing();
    await squattedNames();
    await foreignKeptOwnRevoked();
    await leaksNothing();
  });
});
