/**
 * The whole local estate: moto (EKS, STS, Organizations, EventBridge → SQS) behind the shaping proxy,
 * the local GKE and ARM servers, optionally the real hub, seeded with a small estate, plus a cpsync
 * configuration pointing at all of them. Used by the end-to-end tests and by `npm run emulators`.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  CreateEventBusCommand,
  EventBridgeClient,
  PutRuleCommand,
  PutTargetsCommand,
} from '@aws-sdk/client-eventbridge';
import { CreateQueueCommand, GetQueueAttributesCommand, SQSClient } from '@aws-sdk/client-sqs';
import { stringify } from 'yaml';
import { createEksClusters, HUB_CREDENTIALS } from '../support/aws.ts';
import { TEST_CA_DATA } from '../support/certificates.ts';
import { startAwsProxy, type AwsProxy } from './awsProxy.ts';
import { startArmServer, type ArmServer, type ManagedClusterJson } from './fakes/armServer.ts';
import { startGkeServer, type GkeClusterJson, type GkeServer } from './fakes/gkeServer.ts';
import { startHub, stopHub, type HubState } from './hub.ts';
import { startMoto, type MotoServer } from './moto.ts';

export const EKS_ACCOUNT = '210987654321';
export const GCP_PROJECT = 'acme-data';
export const AZURE_SUBSCRIPTION = '00000000-1111-2222-3333-444444444444';
const BUS_NAME = 'cpsync-events';
const QUEUE_NAME = 'cpsync-subscriber';

export function gkeCluster(
  name: string,
  location: string,
  extra: Record<string, unknown> = {},
): GkeClusterJson {
  const kind = /-[a-z]$/.test(location) ? 'zones' : 'locations';
  return {
    name,
    location,
    selfLink: `https://container.googleapis.com/v1/projects/${GCP_PROJECT}/${kind}/${location}/clusters/${name}`,
    id: `${name}-4f1e2d3c`,
    endpoint: '34.76.10.20',
    masterAuth: { clusterCaCertificate: TEST_CA_DATA },
    currentMasterVersion: '1.30.5-gke.1014001',
    status: 2,
    currentNodeCount: 3,
    nodePools: [
      {
        name: 'default-pool',
        config: { machineType: 'e2-standard-4' },
        initialNodeCount: 1,
        locations: ['a', 'b', 'c'],
      },
    ],
    resourceLabels: { team: 'data' },
    createTime: '2024-03-01T09:00:00+00:00',
    ...extra,
  };
}

/**
 * A rewriter of DescribeCluster answers: the CA data (moto answers a random string) and, for a cluster
 * served elsewhere, the endpoint that `overrides(name)` gives.
 */
export function withEksClusters(overrides: (name: string) => { ca?: string; endpoint?: string } | undefined) {
  return (call: { operation: string; method: string; path: string }, status: number, body: string) => {
    const described = /^\/clusters\/([^/?]+)$/.exec(call.path);
    if (status !== 200 || call.method !== 'GET' || !described) return undefined;
    const answer = JSON.parse(body) as {
      cluster?: { certificateAuthority?: { data?: string }; endpoint?: string };
    };
    const override = overrides(decodeURIComponent(described[1]!));
    if (!answer.cluster || override === undefined) return undefined;
    if (override.ca !== undefined) answer.cluster.certificateAuthority = { data: override.ca };
    if (override.endpoint !== undefined) answer.cluster.endpoint = override.endpoint;
    return JSON.stringify(answer);
  };
}

export function aksCluster(
  name: string,
  group: string,
  properties: Record<string, unknown> = {},
  subscription = AZURE_SUBSCRIPTION,
): ManagedClusterJson {
  return {
    id: `/subscriptions/${subscription}/resourcegroups/${group}/providers/Microsoft.ContainerService/managedClusters/${name}`,
    name,
    location: 'westeurope',
    tags: { team: 'web' },
    systemData: { createdAt: '2024-06-01T08:30:00Z' },
    properties: {
      provisioningState: 'Succeeded',
      powerState: { code: 'Running' },
      kubernetesVersion: '1.30',
      currentKubernetesVersion: '1.30.4',
      fqdn: `${name}-dns.hcp.westeurope.azmk8s.io`,
      agentPoolProfiles: [{ name: 'system', count: 3, vmSize: 'Standard_D4s_v5', mode: 'System' }],
      ...properties,
    },
  };
}

export interface Emulators {
  directory: string;
  moto: MotoServer;
  proxy: AwsProxy;
  gke: GkeServer;
  arm: ArmServer;
  hub?: HubState;
  queueUrl: string;
  /** Path of the generated cpsync configuration. */
  configPath: string;
  /** Environment a cpsync process needs to reach the emulators (AWS credentials, the ARM certificate). */
  env: Record<string, string>;
  /** Number of clusters seeded. */
  clusters: number;
  stop(): Promise<void>;
}

export interface EmulatorOptions {
  directory: string;
  /** Start the real hub and write profiles there (else the file hub in `<directory>/inventory`). */
  withHub?: boolean;
  /** Namespace of the inventory. @default cluster-inventory */
  namespace?: string;
  log?: (line: string) => void;
}

/**
 * What a cpsync process needs to reach the local GKE and ARM servers and the AWS endpoints: the GCP
 * service-account key and the Azure client secret written to files (never inline in the configuration),
 * the ARM server's certificate to trust, and the environment (AWS credentials, NODE_EXTRA_CA_CERTS).
 */
export function localCloudAccess(directory: string, gke: GkeServer, arm: ArmServer) {
  const serviceAccountFile = join(directory, 'gcp-service-account.json');
  writeFileSync(serviceAccountFile, JSON.stringify(gke.serviceAccountKey), { mode: 0o600 });
  const azureSecretFile = join(directory, 'azure-client-secret');
  writeFileSync(azureSecretFile, arm.clientSecret, { mode: 0o600 });
  const certificateFile = join(directory, 'arm-certificate.pem');
  writeFileSync(certificateFile, arm.certificate);
  return {
    gke: { credentials: { file: serviceAccountFile }, endpoint: gke.endpoint },
    aks: {
      credential: { tenantId: arm.tenantId, clientId: arm.clientId, clientSecret: { file: azureSecretFile } },
      endpoint: arm.endpoint,
      authorityHost: arm.endpoint,
    },
    env: {
      AWS_ACCESS_KEY_ID: HUB_CREDENTIALS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: HUB_CREDENTIALS.secretAccessKey,
      AWS_REGION: 'us-east-1',
      NODE_EXTRA_CA_CERTS: certificateFile,
    },
  };
}

/**
 * Google credentials as a pod with workload identity federation has them: an external_account
 * configuration whose subject token comes from a file, exchanged at the local Google STS. Returns its path
 * (what GOOGLE_APPLICATION_CREDENTIALS names). With `as`, the identity is that email's (a consumer's own),
 * else the estate's service account.
 */
export function localGoogleFederation(directory: string, gke: GkeServer, as?: { email: string }): string {
  const suffix = as ? `-${as.email.split('@')[0]}` : '';
  const subjectToken = join(directory, `gke-subject-token${suffix}`);
  const subject = `eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ3b3JrbG9hZCJ9.c2lnbmF0dXJl${suffix}`;
  if (as) gke.identities.set(subject, as.email);
  writeFileSync(subjectToken, subject);
  const path = join(directory, `gcp-external-account${suffix}.json`);
  writeFileSync(
    path,
    JSON.stringify({
      type: 'external_account',
      audience: '//iam.googleapis.com/projects/1/locations/global/workloadIdentityPools/hub/providers/k8s',
      subject_token_type: 'urn:ietf:params:oauth:token-type:jwt',
      token_url: `${gke.endpoint}/v1/token`,
      credential_source: { file: subjectToken },
    }),
  );
  return path;
}

export async function startEmulators(options: EmulatorOptions): Promise<Emulators> {
  const log = options.log ?? (() => {});
  const directory = options.directory;
  mkdirSync(directory, { recursive: true });
  const moto = await startMoto(log);
  const proxy = await startAwsProxy(moto.endpoint);
  // moto answers a random string for a cluster's CA; EKS answers PEM certificates.
  proxy.rewrite(withEksClusters(() => ({ ca: TEST_CA_DATA })));
  const gke = await startGkeServer();
  const arm = await startArmServer();
  const hub = options.withHub ? await startHub(join(directory, 'hub'), log) : undefined;

  await createEksClusters(moto.endpoint, EKS_ACCOUNT, 'us-east-1', [
    {
      name: 'payments',
      tags: { team: 'payments' },
      nodegroups: [
        { name: 'general', instanceTypes: ['m6i.large'], desiredSize: 3 },
        { name: 'compute', instanceTypes: ['c6i.xlarge'], desiredSize: 2 },
      ],
    },
    { name: 'checkout', tags: { team: 'payments' } },
  ]);
  await createEksClusters(moto.endpoint, EKS_ACCOUNT, 'eu-west-1', [{ name: 'payments' }]);
  gke.clusters.set(GCP_PROJECT, [
    gkeCluster('analytics', 'europe-west1'),
    gkeCluster('edge', 'europe-west1-c'),
  ]);
  arm.clusters.set(AZURE_SUBSCRIPTION, [aksCluster('web', 'rg-web'), aksCluster('batch', 'rg-batch')]);

  const aws = { endpoint: moto.endpoint, region: 'us-east-1', credentials: HUB_CREDENTIALS };
  const events = new EventBridgeClient(aws);
  const sqs = new SQSClient(aws);
  const bus = await events.send(new CreateEventBusCommand({ Name: BUS_NAME }));
  const queueUrl = (await sqs.send(new CreateQueueCommand({ QueueName: QUEUE_NAME }))).QueueUrl!;
  const queueArn = (
    await sqs.send(new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['QueueArn'] }))
  ).Attributes!.QueueArn!;
  await events.send(
    new PutRuleCommand({
      Name: 'all-cpsync-events',
      EventBusName: BUS_NAME,
      EventPattern: JSON.stringify({ source: ['cpsync'] }),
    }),
  );
  await events.send(
    new PutTargetsCommand({
      Rule: 'all-cpsync-events',
      EventBusName: BUS_NAME,
      Targets: [{ Id: 'subscriber', Arn: queueArn }],
    }),
  );
  void bus;

  const access = localCloudAccess(directory, gke, arm);

  const config = {
    manager: 'cpsync',
    inventory: { namespace: options.namespace ?? 'cluster-inventory', tagAllowList: ['team'] },
    providers: {
      eks: {
        accounts: [EKS_ACCOUNT],
        regions: ['eu-west-1', 'us-east-1'],
        endpoint: proxy.endpoint,
        maxAttempts: 3,
      },
      gke: { projects: [GCP_PROJECT], ...access.gke, maxRetries: 2 },
      aks: { subscriptions: [AZURE_SUBSCRIPTION], ...access.aks },
    },
    hub: hub ? { kubeconfig: hub.kubeconfig } : { directory: join(directory, 'inventory') },
    bus: { eventBridge: { busName: BUS_NAME, region: 'us-east-1', endpoint: proxy.endpoint } },
    outbox: { directory: join(directory, 'outbox') },
  };
  const configPath = join(directory, 'cpsync.yaml');
  writeFileSync(configPath, stringify(config));
  const env = access.env;
  writeFileSync(
    join(directory, 'env'),
    Object.entries(env)
      .map(([k, v]) => `export ${k}=${v}\n`)
      .join(''),
  );
  return {
    directory,
    moto,
    proxy,
    gke,
    arm,
    ...(hub ? { hub } : {}),
    queueUrl,
    configPath,
    env,
    clusters: 7,
    async stop() {
      await Promise.allSettled([proxy.stop(), gke.stop(), arm.stop()]);
      await moto.stop();
      if (hub) await stopHub(hub.directory);
    },
  };
}
