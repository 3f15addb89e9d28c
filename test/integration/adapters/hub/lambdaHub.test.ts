import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { CreateSecretCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { eksToken } from '../../../../adapters/hub/eksToken.ts';
import { RefreshingHub } from '../../../../adapters/hub/RefreshingHub.ts';
import { connectHub } from '../../../../adapters/compose/hub.ts';
import { FileHub } from '../../../../adapters/hub/FileHub.ts';
import { parseConfig } from '../../../../adapters/compose/config.ts';
import { startMoto, type MotoServer } from '../../../env/moto.ts';
import { venvBin } from '../../../env/python.ts';
import { HUB_CREDENTIALS } from '../../../support/aws.ts';
import { localHub } from '../../../support/hub.ts';

const BOTOCORE_TOKEN = fileURLToPath(new URL('../../../support/python/eks_token.py', import.meta.url));

describe('hub access from Lambda', () => {
  let moto: MotoServer;

  before(async () => {
    moto = await startMoto();
  });
  after(async () => moto?.stop());

  it('makes the same EKS token as `aws eks get-token` (botocore), signature and all', async () => {
    const epoch = 1767225600;
    const ours = await eksToken({
      clusterName: 'hub-prod',
      region: 'eu-west-1',
      credentials: {
        accessKeyId: 'AKIAIOSFODNN7EXAMPLE',
        secretAccessKey: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY',
      },
      signingDate: new Date(epoch * 1000),
    });
    const theirs = spawnSync(
      venvBin('python'),
      [
        BOTOCORE_TOKEN,
        'hub-prod',
        'eu-west-1',
        'AKIAIOSFODNN7EXAMPLE',
        'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY',
        String(epoch),
      ],
      { encoding: 'utf8' },
    );
    assert.equal(theirs.status, 0, theirs.stderr);
    assert.equal(ours, theirs.stdout.trim());
    const url = new URL(Buffer.from(ours.slice('k8s-aws-v1.'.length), 'base64url').toString());
    assert.equal(url.searchParams.get('X-Amz-Expires'), '60');
    assert.equal(url.searchParams.get('X-Amz-SignedHeaders'), 'host;x-k8s-aws-id');
  });

  it('carries a session token when the credentials have one', async () => {
    const token = await eksToken({
      clusterName: 'hub',
      region: 'us-east-1',
      credentials: { accessKeyId: 'ASIA', secretAccessKey: 's', sessionToken: 'session-123' },
    });
    assert.match(Buffer.from(token.slice(11), 'base64url').toString(), /X-Amz-Security-Token=session-123/);
  });

  it('reaches the hub through a kubeconfig kept in Secrets Manager', async () => {
    const state = await localHub();
    const secrets = new SecretsManagerClient({
      endpoint: moto.endpoint,
      region: 'us-east-1',
      credentials: HUB_CREDENTIALS,
    });
    const { ARN } = await secrets.send(
      new CreateSecretCommand({
        Name: 'cpsync/hub-kubeconfig',
        SecretString: readFileSync(state.kubeconfig, 'utf8'),
      }),
    );
    const saved = { ...process.env };
    Object.assign(process.env, {
      AWS_ENDPOINT_URL_SECRETS_MANAGER: moto.endpoint,
      AWS_ACCESS_KEY_ID: HUB_CREDENTIALS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: HUB_CREDENTIALS.secretAccessKey,
      AWS_REGION: 'us-east-1',
    });
    try {
      const { hub } = await connectHub(parseConfig({ hub: { kubeconfigSecretArn: ARN } }));
      assert.deepEqual(await hub.list('default', { 'x-k8s.io/cluster-manager': 'nobody' }), []);
    } finally {
      process.env = saved;
    }
  });

  it('reconnects (with a fresh token) once the connection is older than its lifetime', async () => {
    let now = 0;
    let connections = 0;
    const hub = new RefreshingHub(
      async () => {
        connections += 1;
        return new FileHub({ directory: '/nonexistent-cpsync-hub' });
      },
      600_000,
      () => now,
    );
    await hub.list('a', {});
    now = 599_999;
    await hub.list('a', {});
    assert.equal(connections, 1);
    now = 600_000;
    await hub.list('a', {});
    assert.equal(connections, 2);
  });
});
