/**
 * The Kubernetes hub's two ways of sending a request (adapters/hub/connections.ts): undici's `request()`, the
 * default, and client-node's own `fetch()` path. What the hub says reaches cpsync the same either way: every
 * refusal and failure (401, 403, 409, 410, 429, 500, 503, a dropped connection) as the same error, a connection
 * lost between requests replaced by the next one, credentials refused and then renewed by a fresh connection.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { KubeConfig } from '@kubernetes/client-node';
import type { HubHttpLibrary } from '../../../../adapters/hub/connections.ts';
import {
  HubConflictError,
  HubError,
  HubForbiddenError,
  HubUnavailableError,
} from '../../../../adapters/hub/errors.ts';
import { KubernetesHub } from '../../../../adapters/hub/KubernetesHub.ts';
import { RefreshingHub } from '../../../../adapters/hub/RefreshingHub.ts';
import { normalize } from '../../../../core/domain/normalize.ts';
import type { HubState } from '../../../env/hub.ts';
import { startHubProxy, type HubProxy } from '../../../env/hubProxy.ts';
import { startTcpRelay } from '../../../env/net.ts';
import { eksCluster, NOW } from '../../../support/fixtures.ts';
import { adminKubeConfig, localHub, uniqueNamespace } from '../../../support/hub.ts';
import { inventoryOptions } from '../../../support/settings.ts';

const PATHS: HubHttpLibrary[] = ['request', 'fetch'];

function viaProxy(proxy: HubProxy, server = proxy.server): KubeConfig {
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromString(proxy.kubeconfig);
  kubeConfig.clusters[0] = { ...kubeConfig.clusters[0]!, server };
  return kubeConfig;
}

/** What cpsync is told of a failed request: the error's kind, the hub's status and the message. */
async function failure(request: Promise<unknown>) {
  try {
    await request;
  } catch (error) {
    assert.ok(error instanceof HubError, `not a hub error: ${String(error)}`);
    return { kind: error.constructor.name, status: error.status, message: error.message };
  }
  assert.fail('the request went through');
}

describe('the Kubernetes hub, by either request path', () => {
  let state: HubState;
  let proxy: HubProxy;
  let namespace: string;
  const profile = () => {
    const made = normalize(eksCluster({ name: 'request-paths' }), inventoryOptions({ namespace }), NOW);
    return made;
  };

  before(async () => {
    state = await localHub();
    proxy = await startHubProxy(state);
    namespace = uniqueNamespace('request-paths');
    await new KubernetesHub({ kubeConfig: adminKubeConfig(state) }).ensureNamespace({ name: namespace });
  });
  after(() => proxy.stop());

  it('tells every refusal and failure of the hub as the same error', async () => {
    const expected = {
      401: HubForbiddenError,
      403: HubForbiddenError,
      409: HubConflictError,
      410: HubError,
      429: HubUnavailableError,
      500: HubUnavailableError,
      503: HubUnavailableError,
    } as const;
    try {
      for (const [status, kind] of Object.entries(expected)) {
        proxy.rule = () => ({ status: Number(status) as keyof typeof expected });
        const told = new Map<HubHttpLibrary, unknown>();
        for (const httpLibrary of PATHS) {
          const hub = new KubernetesHub({ kubeConfig: viaProxy(proxy), httpLibrary });
          const ref = { namespace, name: 'request-paths' };
          const answers = [
            await failure(hub.get(ref)),
            await failure(hub.list(namespace, { 'x-k8s.io/cluster-manager': 'cpsync' })),
            await failure(hub.applyObject(profile())),
            await failure(hub.applyStatus(profile())),
            await failure(hub.delete({ ...ref, resourceVersion: '1' })),
          ];
          for (const answer of answers) {
            assert.equal(answer.kind, kind.name, `${status} by ${httpLibrary}: ${answer.message}`);
            assert.equal(answer.status, Number(status));
            // client-node reads no body of a 401 (its message is its own); every other answer's is the hub's.
            assert.match(answer.message, status === '401' ? /Unauthorized/ : /injected \w+/);
          }
          told.set(
            httpLibrary,
            answers.map((answer) => (status === '401' ? { ...answer, message: undefined } : answer)),
          );
        }
        assert.deepEqual(told.get('request'), told.get('fetch'), `${status}: the same on both paths`);
      }
    } finally {
      proxy.rule = undefined;
    }
  });

  it('fails a request whose connection the hub drops, and sends the next on a new connection', async () => {
    for (const httpLibrary of PATHS) {
      // A TCP relay in front of the proxy counts the connections the client opens.
      const relay = await startTcpRelay('127.0.0.1', Number(new URL(proxy.server).port));
      try {
        const hub = new KubernetesHub({
          kubeConfig: viaProxy(proxy, `https://127.0.0.1:${relay.port}`),
          httpLibrary,
        });
        const ref = { namespace, name: 'absent' };
        for (let i = 0; i < 3; i++) assert.equal(await hub.get(ref), undefined);
        const open = relay.connections();
        for (let i = 0; i < 3; i++) assert.equal(await hub.get(ref), undefined);
        assert.equal(relay.connections(), open, `${httpLibrary}: the connections are kept`);
        const dropped = proxy.requests.length;
        proxy.rule = ({ index }) => (index === dropped ? { drop: true } : undefined);
        const lost = await failure(hub.get(ref));
        assert.equal(lost.kind, 'HubUnavailableError', lost.message);
        assert.equal(lost.status, undefined);
        for (let i = 0; i < 3; i++) assert.equal(await hub.get(ref), undefined);
        assert.equal(relay.connections(), open + 1, `${httpLibrary}: one new connection after the drop`);
      } finally {
        proxy.rule = undefined;
        await relay.stop();
      }
    }
  });

  it('is refused with a token the hub does not know (401), and goes on once a fresh connection renews it', async () => {
    for (const httpLibrary of PATHS) {
      const cluster = adminKubeConfig(state).getCurrentCluster()!;
      const withToken = () => {
        const kubeConfig = new KubeConfig();
        kubeConfig.loadFromOptions({
          clusters: [cluster],
          users: [{ name: 'expired', token: 'k8s-aws-v1.expired' }],
          contexts: [{ name: 'hub', cluster: cluster.name, user: 'expired' }],
          currentContext: 'hub',
        });
        return kubeConfig;
      };
      // The first connection carries a token the kube-apiserver refuses; the one made once it is too old
      // carries credentials it takes, as an EKS hub's fresh token would be.
      let now = 0;
      let connections = 0;
      const hub = new RefreshingHub(
        async () => {
          connections += 1;
          const kubeConfig = connections === 1 ? withToken() : adminKubeConfig(state);
          return new KubernetesHub({ kubeConfig, httpLibrary });
        },
        60_000,
        () => now,
      );
      const refused = await failure(hub.list(namespace, {}));
      assert.equal(refused.kind, 'HubForbiddenError', refused.message);
      assert.equal(refused.status, 401);
      now = 60_000;
      assert.deepEqual(await hub.list(namespace, { 'x-k8s.io/cluster-manager': 'nobody' }), []);
      assert.equal(connections, 2);
    }
  });
});
