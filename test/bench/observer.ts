/**
 * The usable bench's oracle, in a process of its own: what the hub shows (a watch on the inventory's
 * ClusterProfiles), what the member holds (a watch on the consumer's ConfigMaps) and what reached the bus (its
 * subscriber queue, in moto), each stamped the moment this process saw it and sent to the bench over IPC. Apart
 * from the bench's process, whose event loop also runs the functions and the clouds' servers, its stamps are not
 * late by that loop's backlog: a consumer watches the hub from its own process too.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { DeleteMessageBatchCommand, ReceiveMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { KubeConfig, Watch } from '@kubernetes/client-node';

/** What the bench gives the observer. */
export interface ObserverSetup {
  hubKubeconfig: string;
  namespace: string;
  memberKubeconfig: string;
  objects: string;
  queueUrl: string;
  aws: { endpoint: string; region: string; credentials: { accessKeyId: string; secretAccessKey: string } };
}

/** What the observer saw, and when (Date.now() in its process). */
export type Observation =
  | { kind: 'ready' }
  | { kind: 'profile'; displayName: string; name: string; at: number }
  | { kind: 'usable'; displayName: string; at: number }
  | { kind: 'profile-gone'; displayName: string; at: number }
  | { kind: 'object'; name: string; at: number }
  | { kind: 'event'; detailType: string; displayName: string; at: number };

interface Profile {
  metadata: { name: string };
  spec: { displayName: string };
  status?: {
    conditions?: Array<{ type: string; status: string }>;
    accessProviders?: Array<{ cluster?: { server?: string; 'certificate-authority-data'?: string } }>;
  };
}

/** Usable: the profile carries its server, its CA and `ControlPlaneHealthy=True`. */
function usable(profile: Profile): boolean {
  const cluster = profile.status?.accessProviders?.[0]?.cluster;
  const healthy = profile.status?.conditions?.find((c) => c.type === 'ControlPlaneHealthy')?.status;
  return !!cluster?.server && !!cluster['certificate-authority-data'] && healthy === 'True';
}

/** Watches `path` until told to stop, starting again when the server ends a watch. */
async function watching(
  config: KubeConfig,
  path: string,
  seen: (type: string, object: unknown) => void,
  running: () => boolean,
  started: () => void,
): Promise<void> {
  const watch = new Watch(config);
  let first = true;
  while (running()) {
    await new Promise<void>((resolve) => {
      watch
        .watch(path, {}, seen, () => resolve())
        .then(() => {
          if (first) started();
          first = false;
        })
        .catch(() => resolve());
    });
    if (running()) await sleep(100);
  }
}

async function observe(setup: ObserverSetup, send: (o: Observation) => void): Promise<void> {
  let running = true;
  process.on('disconnect', () => {
    running = false;
    process.exit(0);
  });
  const hub = new KubeConfig();
  hub.loadFromFile(setup.hubKubeconfig);
  const member = new KubeConfig();
  member.loadFromFile(setup.memberKubeconfig);
  const profiles = new Map<string, { usable: boolean }>();
  let watches = 0;
  const started = () => {
    if (++watches === 2) send({ kind: 'ready' });
  };
  void watching(
    hub,
    `/apis/multicluster.x-k8s.io/v1alpha1/namespaces/${setup.namespace}/clusterprofiles`,
    (type, object) => {
      const at = Date.now();
      const profile = object as Profile;
      const displayName = profile.spec?.displayName;
      if (!displayName) return;
      if (type === 'DELETED') {
        profiles.delete(displayName);
        send({ kind: 'profile-gone', displayName, at });
        return;
      }
      let known = profiles.get(displayName);
      if (!known) {
        profiles.set(displayName, (known = { usable: false }));
        send({ kind: 'profile', displayName, name: profile.metadata.name, at });
      }
      if (!known.usable && usable(profile)) {
        known.usable = true;
        send({ kind: 'usable', displayName, at });
      }
    },
    () => running,
    started,
  );
  void watching(
    member,
    `/api/v1/namespaces/${setup.objects}/configmaps`,
    (type, object) => {
      const at = Date.now();
      const name = (object as { metadata?: { name?: string } }).metadata?.name;
      if (type === 'ADDED' && name) send({ kind: 'object', name, at });
    },
    () => running,
    started,
  );
  const sqs = new SQSClient(setup.aws);
  while (running) {
    const { Messages = [] } = await sqs.send(
      new ReceiveMessageCommand({ QueueUrl: setup.queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1 }),
    );
    const at = Date.now();
    for (const message of Messages) {
      const event = JSON.parse(message.Body!) as {
        'detail-type': string;
        detail: { cluster?: { displayName?: string } };
      };
      const displayName = event.detail.cluster?.displayName;
      if (displayName) send({ kind: 'event', detailType: event['detail-type'], displayName, at });
    }
    if (Messages.length > 0)
      await sqs.send(
        new DeleteMessageBatchCommand({
          QueueUrl: setup.queueUrl,
          Entries: Messages.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle! })),
        }),
      );
  }
}

if (process.argv[2] === 'child') {
  const setup = JSON.parse(process.argv[3]!) as ObserverSetup;
  observe(setup, (o) => process.send!(o)).catch((error: unknown) => {
    console.error('the observer failed', error);
    process.exit(1);
  });
}
