/**
 * Every ARN and STS host cpsync builds from parts is in the partition of the region it is for, over generated
 * regions of every partition (those AWS has today and others named as their regions are). The oracle is AWS's
 * documentation of its partitions (test/support/awsPartitions.ts), not the SDK table cpsync reads.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { ConfigError, eksHomeRegion, parseConfig } from '../../../../adapters/compose/config.ts';
import {
  homeRegionFromEnvironment,
  resolvedHomeRegion,
} from '../../../../adapters/compose/providers/eksHomeRegion.ts';
import { eksRoleArn } from '../../../../adapters/credentials/tokens.ts';
import { resolveTarget } from '../../../../adapters/credentials/target.ts';
import { awsClientFactory } from '../../../../adapters/eks/awsClients.ts';
import { configFromEnvironment } from '../../../../functions/runtime.ts';
import { EksSource } from '../../../../adapters/eks/EksSource.ts';
import { eksClusterArn } from '../../../../adapters/eks/clusterArn.ts';
import { eksClusterOfArn, isEksClusterArn } from '../../../../adapters/eks/mapCluster.ts';
import { eksToken } from '../../../../adapters/hub/eksToken.ts';
import { ambientAwsRegion, awsPartitionOf } from '../../../../adapters/shared/awsPartition.ts';
import { ACCESS_LEVELS, eksAccessPolicyArn } from '../../../../core/domain/grants.ts';
import { canonicalScope } from '../../../../core/domain/scopes.ts';
import { anyRegion, documentedPartitionOf } from '../../../support/awsPartitions.ts';
import { temporaryDirectory } from '../../../support/tmp.ts';

const account = fc.stringMatching(/^\d{12}$/);
const clusterName = fc.stringMatching(/^[0-9A-Za-z][A-Za-z0-9_-]{0,30}$/);
const CREDENTIALS = { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'secret' };

describe('AWS partitions: every ARN and STS host in the partition of its region (property)', () => {
  it('reads the partition and its DNS suffix as AWS documents them, for any region', () => {
    fc.assert(
      fc.property(anyRegion, (region) => {
        const documented = documentedPartitionOf(region);
        assert.deepEqual(awsPartitionOf(region), { name: documented.name, dnsSuffix: documented.dnsSuffix });
      }),
      { numRuns: 400 },
    );
  });

  it("names a cluster, a member role, the plugin's role and an access policy in the region's partition", async () => {
    await fc.assert(
      fc.asyncProperty(
        anyRegion,
        account,
        clusterName,
        fc.constantFrom(...ACCESS_LEVELS),
        async (region, accountId, name, level) => {
          const partition = documentedPartitionOf(region).name;
          const arn = eksClusterArn(accountId, region, name);
          assert.equal(arn, `arn:${partition}:eks:${region}:${accountId}:cluster/${name}`);
          assert.deepEqual(eksClusterOfArn(arn), { partition, region, account: accountId, name });
          assert.ok(isEksClusterArn(arn, accountId, region, name));
          // The access policy EKS knows in the cluster's partition, from the cluster's own ARN.
          assert.equal(
            eksAccessPolicyArn(eksClusterOfArn(arn).partition, level),
            `arn:${partition}:eks::aws:cluster-access-policy/${{ view: 'AmazonEKSViewPolicy', edit: 'AmazonEKSEditPolicy', admin: 'AmazonEKSAdminPolicy' }[level]}`,
          );
          // The member role, assumed through the home region's partition.
          const source = new EksSource({
            homeRegion: region,
            hubAccountId: '000000000000',
            credentials: async () => CREDENTIALS,
          });
          assert.equal(source.roleArn(accountId), `arn:${partition}:iam::${accountId}:role/cpsync-reader`);
          // The credential plugin's role, from a role name and the cluster's region.
          const target = resolveTarget(undefined, {
            provider: 'eks',
            clusterName: name,
            region,
            account: accountId,
          });
          assert.equal(
            await eksRoleArn(target as Extract<typeof target, { provider: 'eks' }>, {
              roleName: 'reader',
              env: {},
              now: () => new Date(),
            }),
            `arn:${partition}:iam::${accountId}:role/reader`,
          );
          assert.equal(
            await eksRoleArn(target as Extract<typeof target, { provider: 'eks' }>, {
              roleArn: 'arn:{partition}:iam::{accountId}:role/reader-{region}',
              env: {},
              now: () => new Date(),
            }),
            `arn:${partition}:iam::${accountId}:role/reader-${region}`,
          );
        },
      ),
      { numRuns: 300 },
    );
  });

  it("signs an EKS token for the region's own STS host, in its partition's domain", async () => {
    await fc.assert(
      fc.asyncProperty(anyRegion, clusterName, async (region, name) => {
        const token = await eksToken({
          clusterName: name,
          region,
          credentials: CREDENTIALS,
          signingDate: new Date('2026-11-30T03:00:00Z'),
        });
        assert.ok(token.startsWith('k8s-aws-v1.'));
        const url = new URL(Buffer.from(token.slice('k8s-aws-v1.'.length), 'base64url').toString());
        assert.equal(url.host, `sts.${region}.${documentedPartitionOf(region).dnsSuffix}`);
        assert.match(
          url.searchParams.get('X-Amz-Credential') ?? '',
          new RegExp(`/${region}/sts/aws4_request$`),
        );
      }),
      { numRuns: 200 },
    );
  });

  it('accepts every region of every partition in the configuration, a scope and the credential plugin', () => {
    fc.assert(
      fc.property(anyRegion, account, (region, accountId) => {
        const config = parseConfig({ providers: { eks: { accounts: [accountId], regions: [region] } } });
        assert.deepEqual(config.providers.eks?.regions, [region]);
        assert.deepEqual(canonicalScope({ provider: 'eks', account: accountId, region }), {
          provider: 'eks',
          account: accountId,
          region,
        });
        assert.equal(resolveTarget(undefined, { provider: 'eks', clusterName: 'c', region }).provider, 'eks');
      }),
      { numRuns: 200 },
    );
  });

  it("puts the home region in the listed regions' partition, and names every listed region of another", () => {
    fc.assert(
      fc.property(
        fc.array(anyRegion, { minLength: 1, maxLength: 6 }),
        fc.option(anyRegion, { nil: undefined }),
        (regions, homeRegion) => {
          const home =
            homeRegion ?? (documentedPartitionOf(regions[0]!).name === 'aws' ? 'us-east-1' : regions[0]!);
          const partition = documentedPartitionOf(home).name;
          const strays = regions.flatMap((region, index) =>
            documentedPartitionOf(region).name === partition ? [] : [{ region, index }],
          );
          if (strays.length === 0) {
            assert.equal(eksHomeRegion({ regions, homeRegion }), home);
            return;
          }
          assert.throws(
            () => eksHomeRegion({ regions, homeRegion }),
            (error: unknown) => {
              assert.ok(error instanceof ConfigError);
              assert.deepEqual(
                error.issues.map((issue) =>
                  /^providers\.eks\.regions\[(\d+)\]: (\S+) is in the (\S+) partition/.exec(issue)?.slice(1),
                ),
                strays.map(({ region, index }) => [
                  String(index),
                  region,
                  documentedPartitionOf(region).name,
                ]),
              );
              assert.ok(
                error.issues.every(
                  (issue) => issue.includes(`home region ${home}`) && issue.includes(`is in ${partition}:`),
                ),
              );
              return true;
            },
          );
        },
      ),
      { numRuns: 300 },
    );
  });

  it("refuses regions of two partitions wherever a configuration is read: a file, a function's CPSYNC_CONFIG", () => {
    const document = {
      providers: { eks: { accounts: ['111122223333'], regions: ['cn-north-1', 'us-east-1'] } },
    };
    const refusal =
      /^providers\.eks\.regions\[1\]: us-east-1 is in the aws partition, but the home region cn-north-1 is in aws-cn/;
    assert.throws(
      () => parseConfig(document, 'cpsync.yaml'),
      (error: unknown) =>
        error instanceof ConfigError &&
        /in cpsync\.yaml/.test(error.message) &&
        refusal.test(error.issues[0]!),
    );
    // A deployed function reads its configuration at start, before any scope or event is taken.
    assert.throws(
      () => configFromEnvironment({ CPSYNC_CONFIG: JSON.stringify(document) }),
      (error: unknown) => error instanceof ConfigError && refusal.test(error.issues[0]!),
    );
  });

  it('without regions listed, takes the region where cpsync runs when it is of another partition than aws (property)', () => {
    fc.assert(
      fc.property(
        fc.option(anyRegion, { nil: undefined }),
        fc.option(fc.oneof(anyRegion, fc.constantFrom('nowhere', '', 'CN-NORTH-1')), { nil: undefined }),
        (homeRegion, environmentRegion) => {
          const fromEnvironment =
            environmentRegion !== undefined &&
            /^[a-z]/.test(environmentRegion) &&
            environmentRegion !== 'nowhere' &&
            documentedPartitionOf(environmentRegion).name !== 'aws'
              ? environmentRegion
              : 'us-east-1';
          assert.equal(eksHomeRegion({ homeRegion }, '', environmentRegion), homeRegion ?? fromEnvironment);
          assert.equal(homeRegionFromEnvironment({ homeRegion }), homeRegion === undefined);
          // Listed regions speak for the partition: the region where cpsync runs is not asked.
          assert.equal(homeRegionFromEnvironment({ regions: ['eu-west-1'] }), false);
          assert.equal(eksHomeRegion({ regions: ['eu-west-1'] }, '', environmentRegion), 'us-east-1');
          assert.equal(
            eksHomeRegion({ regions: ['cn-northwest-1'] }, '', environmentRegion),
            'cn-northwest-1',
          );
        },
      ),
      { numRuns: 300 },
    );
  });

  it("finds the region where cpsync runs: AWS_REGION, AWS_DEFAULT_REGION, else the AWS profile's, as the SDK reads it", async () => {
    const directory = temporaryDirectory('cpsync-aws-config-');
    const file = join(directory, 'config');
    writeFileSync(file, '[default]\nregion = cn-north-1\n\n[profile gov]\nregion = us-gov-west-1\n');
    const saved = { ...process.env };
    try {
      assert.equal(
        await ambientAwsRegion({ AWS_REGION: 'cn-northwest-1', AWS_DEFAULT_REGION: 'eu-west-1' }),
        'cn-northwest-1',
      );
      assert.equal(await ambientAwsRegion({ AWS_DEFAULT_REGION: 'us-gov-east-1' }), 'us-gov-east-1');
      // Nothing in the environment: the SDK reads the profile (process.env names the file and the profile).
      for (const key of ['AWS_REGION', 'AWS_DEFAULT_REGION', 'AWS_PROFILE']) delete process.env[key];
      process.env.AWS_CONFIG_FILE = file;
      assert.equal(await ambientAwsRegion({}), 'cn-north-1');
      process.env.AWS_PROFILE = 'gov';
      assert.equal(await ambientAwsRegion({}), 'us-gov-west-1');
      assert.equal(await resolvedHomeRegion({}), 'us-gov-west-1');
      assert.equal(await resolvedHomeRegion({ regions: ['eu-west-1'] }), 'us-east-1');
      process.env.AWS_CONFIG_FILE = join(directory, 'none');
      delete process.env.AWS_PROFILE;
      assert.equal(await ambientAwsRegion({}), undefined);
      assert.equal(await resolvedHomeRegion({}), 'us-east-1');
    } finally {
      for (const key of Object.keys(process.env)) if (!(key in saved)) delete process.env[key];
      Object.assign(process.env, saved);
    }
  });

  it("sends Organizations' calls to the home region (its partition's Organizations)", async () => {
    for (const home of ['us-east-1', 'cn-northwest-1', 'us-gov-west-1']) {
      const organizations = await awsClientFactory({
        homeRegion: home,
        credentials: async () => CREDENTIALS,
      }).organizations();
      try {
        assert.equal(await organizations.config.region(), home);
      } finally {
        organizations.destroy();
      }
    }
  });
});
