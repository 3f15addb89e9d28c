/**
 * The one configuration document of cpsync (SPEC §6), shared by the CLI (a YAML file) and the Lambda
 * functions (the stack's props or a parameter). Validated with zod; errors name the field.
 *
 * One file because it is one schema: `validate-config`, the functions and the generated reference
 * (docs/reference/configuration.md) read it whole, and each section is one zod object below.
 */
import { z } from 'zod';
import { CpsyncError } from '../../core/domain/errors.ts';
import {
  DEFAULT_DELETION_GRACE_LISTINGS,
  DEFAULT_MANAGER,
  DEFAULT_NAMESPACE,
  DEFAULT_TAG_LABEL_PREFIX,
} from '../../core/domain/constants.ts';
import { foldCase, isDns1123Label, MAX_MANAGER_LENGTH } from '../../core/domain/naming.ts';
import { AWS_REGION } from '../../core/domain/scopes.ts';
import { withoutUserinfo } from '../../core/domain/text.ts';
import type { ClusterMatcher, InventoryOptions } from '../../core/domain/options.ts';
import { DEFAULT_FEATURE_GATES, FEATURE_NAMES, type FeatureName } from '../../core/domain/features.ts';
import { refusedAllowListEntry, refusedTagLabelPrefix } from '../../core/domain/tagLabels.ts';
import { isLabelValue } from '../../core/domain/labels.ts';
import { awsPartitionOf } from '../shared/awsPartition.ts';
import { manyPrincipals } from '../gke/manyPrincipals.ts';

const dnsLabel = z.string().refine(isDns1123Label, {
  message: 'must be a DNS-1123 label (lower-case letters, digits and -, at most 63 characters)',
});
const awsAccount = z.string().regex(/^\d{12}$/, 'must be a 12-digit AWS account id');
const awsRegion = z.string().regex(AWS_REGION, 'must be an AWS region such as us-east-1');

const LOOPBACK = /^(localhost|127(?:\.\d{1,3}){3}|\[::1\])$/i;

/**
 * An endpoint cpsync sends credentials to: https, or plain http to this machine only (local emulators
 * and proxies). Anything else (`file:`, `ftp:`, http to another host) is refused when the
 * configuration is read, not when the first request fails.
 */
const url = z.string().superRefine((value, context) => {
  let parsed: URL;
  try {
    parsed = new URL(value);
  } catch {
    context.addIssue({
      code: 'custom',
      message: `must be a URL, got ${JSON.stringify(withoutUserinfo(value))}`,
    });
    return;
  }
  // Shown without any user:password@ it may carry (and refused for carrying one).
  const shown = JSON.stringify(parsed.username || parsed.password ? withoutUserinfo(value) : value);
  if (parsed.username || parsed.password) {
    context.addIssue({
      code: 'custom',
      message: `must not carry credentials (user:password@), got ${shown}`,
    });
    return;
  }
  const loopback = LOOPBACK.test(parsed.hostname);
  if (parsed.protocol === 'https:' || (parsed.protocol === 'http:' && loopback)) return;
  context.addIssue({
    code: 'custom',
    message:
      parsed.protocol === 'http:'
        ? `must be https:// (plain http:// only to this machine: localhost, 127.0.0.1), got ${shown}`
        : `must be an https:// URL, got ${shown}`,
  });
});

const provider = z.enum(['eks', 'gke', 'aks']);

/** An AWS Secrets Manager secret, by its complete or partial ARN (the CDK app grants reading it). */
const secretArn = z
  .string()
  .regex(
    /^arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:\d{12}:secret:[\w/+=.@-]+$/,
    'must be a Secrets Manager secret ARN (arn:aws:secretsmanager:<region>:<account>:secret:<name>)',
  );

/** Where a secret comes from: a file (mounted or local) or an AWS Secrets Manager secret. Never inline. */
const secretRef = z.union([
  z.strictObject({
    /** A file holding the secret, read as text; a relative path is from the configuration file's directory. */
    file: z.string().min(1),
  }),
  z.strictObject({
    /** An AWS Secrets Manager secret holding it (its string value), by ARN, read with cpsync's AWS credentials. */
    secretArn,
  }),
]);

/** An AWS Organizations OU or root id, as Organizations spells them. */
const organizationalUnit = z
  .string()
  .regex(
    /^(ou-[0-9a-z]{4,32}-[a-z0-9]{8,32}|r-[0-9a-z]{4,32})$/,
    'must be an OU id (ou-abcd-12345678) or a root id (r-abcd)',
  );

const iamRoleName = z.string().regex(/^[\w+=,.@-]{1,64}$/, 'must be an IAM role name');

/**
 * An IAM role or user, by its ARN, as IAM names a session's principal (`aws:PrincipalArn`): exactly one, so no
 * wildcard; a session's ARN (`arn:aws:sts::…:assumed-role/…`) is refused, naming the role's ARN to give instead.
 */
export const IAM_PRINCIPAL_ARN =
  /^arn:aws(?:-[a-z]+)*:iam::(\d{12}):(?:role|user)\/(?:[\w+=,.@-]+\/)*[\w+=,.@-]{1,128}$/;
const iamPrincipalArn = z.string().superRefine((arn, context) => {
  if (IAM_PRINCIPAL_ARN.test(arn)) return;
  context.addIssue({
    code: 'custom',
    message: /^arn:aws(-[a-z]+)*:sts::\d{12}:assumed-role\//.test(arn)
      ? "must be the role's ARN (arn:aws:iam::<account>:role/<path/name>), not a session's (arn:aws:sts::…:assumed-role/…)"
      : 'must be the ARN of one IAM role or user, with no wildcard, such as arn:aws:iam::111111111111:role/platform-admin',
  });
});

/** EKS: the AWS accounts and regions whose clusters are listed, and how (or `off`); unset, EKS is not listed. */
const eks = z.strictObject({
  /**
   * The accounts to list: an explicit list of account ids, or AWS Organizations discovery
   * (`{ organization: { includeOus, excludeOus } }`; suspended accounts are skipped).
   */
  accounts: z.union([
    z.array(awsAccount).min(1),
    z.strictObject({
      /**
       * AWS Organizations discovery: the organization's active accounts (cpsync runs in its management or a
       * delegated-administrator account); `{}` for every one.
       */
      organization: z.strictObject({
        /**
         * Only accounts under these OUs or roots (`ou-…`, `r-…`), searched recursively; unset, every account. An empty
         * list is refused: it would read as every account.
         */
        includeOus: z
          .array(organizationalUnit)
          .min(1, 'must name at least one OU or root; leave it out for every account')
          .optional(),
        /** No account under these OUs or roots, searched recursively; unset, none left out. */
        excludeOus: z.array(organizationalUnit).optional(),
      }),
    }),
  ]),
  /** Regions to list; omitted, every region enabled for each account. */
  regions: z.array(awsRegion).min(1).optional(),
  /** The role assumed in member accounts (not in cpsync's own account). */
  roleName: iamRoleName.default('cpsync-reader'),
  /** What the member roles' trust policies require as the external id, if anything. */
  externalId: z.string().min(2).max(1224).optional(),
  /**
   * Who else of the account cpsync runs in may assume the member roles: the IAM roles or users (each by its exact
   * ARN) that run cpsync from the CLI. The member roles (`CpsyncMemberRoles`) trust cpsync's function roles (the IAM
   * path `/cpsync/`) and these, and no other principal of that account. Unset: cpsync's functions alone.
   */
  operators: z.array(iamPrincipalArn).min(1).optional(),
  endpoint: url.optional(),
  /**
   * Where account-wide calls go (STS, EC2 DescribeRegions, Organizations): a region of the partition cpsync's AWS
   * credentials and the member roles are in (`aws`, `aws-cn`, `aws-us-gov`, …), whose ARNs cpsync names them by.
   * Every listed region must be of that partition. Unset: the first listed region when the regions are of another
   * partition than `aws` (`cn-north-1`); with no regions listed, the region where cpsync runs (`AWS_REGION`, a
   * function's own in Lambda, or the AWS profile's) when it is of another partition; else `us-east-1`.
   */
  homeRegion: awsRegion.optional(),
  /** Attempts per call; throttling is ridden out by the SDK's adaptive retry. */
  maxAttempts: z.number().int().min(1).max(20).default(8),
  /** Calls in flight against one account. */
  perAccountConcurrency: z.number().int().min(1).max(64).default(8),
  /** Calls in flight over all accounts. */
  overallConcurrency: z.number().int().min(1).max(256).default(32),
  /**
   * How long the node groups read for a cluster stand for the cloud's answer while DescribeCluster shows the
   * cluster unchanged (a node-group call's CloudTrail event reads them at once); 0 reads them at every sync.
   */
  nodegroupsMaxAgeMinutes: z.number().int().min(0).max(1440).default(360),
  /**
   * How long a listed cluster's DescribeCluster answer stands for the cloud's while the cluster is ACTIVE with no
   * health issues and its node groups are remembered and settled (a CloudTrail event for the cluster, a follow-up
   * look and `cpsync sync --fresh` read it at once); 0 describes every listed cluster at every sync. Above 0,
   * ControlPlaneHealthy may lag by up to this age: an EKS health issue (a KMS key disabled, a subnet deleted) comes
   * with no API call, so no event; and where no CloudTrail event arrives (the CLI), a change made meanwhile (a new
   * version, a cluster deleted and created again under its name) shows within this age. It stands no longer than
   * the node groups read with it (`nodegroupsMaxAgeMinutes`). Each cluster is described again at a time of its own
   * in each such period (spread over the clusters by their ARNs), so each sync describes its share of them.
   */
  clusterMaxAgeMinutes: z.number().int().min(0).max(1440).default(60),
});

/** GKE: the GCP projects whose clusters are listed, and how (or `off`); unset, GKE is not listed. */
const gke = z.strictObject({
  /**
   * The projects to list: an explicit list of project ids, or Resource Manager's project search
   * (`{ search: { query: "parent:folders/123456789" } }`).
   */
  projects: z.union([
    z.array(z.string().regex(/^[a-z][a-z0-9-]{4,28}[a-z0-9]$/, 'must be a GCP project id')).min(1),
    z.strictObject({
      /** Resource Manager's project search: every active project it finds. */
      search: z.strictObject({
        /** The search's query (`searchProjects` syntax); `""`, every project the credentials can see. */
        query: z.string().default(''),
      }),
    }),
  ]),
  /** A credential configuration (external_account preferred, service_account key as fallback). */
  credentials: secretRef.optional(),
  endpoint: url.optional(),
  /** Retries, after the first ask, of a listing, a project search or a project IAM call answered 429, 503 or 504. */
  maxRetries: z.number().int().min(0).max(10).default(5),
});

/** AKS: the Azure subscriptions whose clusters are listed, and how (or `off`); unset, AKS is not listed. */
const aks = z.strictObject({
  /**
   * The subscriptions to list: an explicit list of subscription ids, or `{ all: true }` (every subscription the
   * identity can see, in a usable state).
   */
  subscriptions: z.union([
    z.array(z.guid({ message: 'must be a subscription id (a GUID)' }).transform(foldCase)).min(1),
    z.strictObject({
      /** `true`: every subscription the identity can see in a usable state (Enabled, Warned or PastDue). */
      all: z.literal(true),
    }),
  ]),
  /**
   * The identity cpsync uses in Azure: a federated credential (preferred) or a client secret (from a file or
   * Secrets Manager); omitted, the default credential chain.
   */
  credential: z
    .union([
      z.strictObject({
        /** The Entra tenant (directory) id of the identity. */
        tenantId: z.string().min(1),
        /** The identity's client (application) id. */
        clientId: z.string().min(1),
        /**
         * A file holding the federated token (as workload identity mounts it), read again for every new access
         * token; a relative path is from the configuration file's directory.
         */
        federatedTokenFile: z.string().min(1),
      }),
      z.strictObject({ tenantId: z.string().min(1), clientId: z.string().min(1), clientSecret: secretRef }),
    ])
    .optional(),
  endpoint: url.optional(),
  /** listClusterUserCredential calls in flight against one subscription (ARM throttles reads per subscription). */
  perSubscriptionConcurrency: z.number().int().min(1).max(64).default(8),
  authorityHost: url.optional(),
  /** Read each cluster's CA with listClusterUserCredential (only the CA is kept of the kubeconfig it returns). */
  fetchCertificateAuthority: z.boolean().default(true),
  /**
   * How long a CA read stands for the cloud's answer while the listing shows the cluster's control plane settled
   * and unchanged (a day at most); 0 reads every CA at every sync.
   */
  certificateAuthorityMaxAgeHours: z.number().min(0).max(24).default(24),
  /**
   * How clusters are listed: `arm` (one `managedClusters.list` per subscription), or `resourceGraph` (one Azure
   * Resource Graph query for every subscription, with ARM reading only the clusters whose row changed, and
   * confirming every absence with its own "not found" before a profile goes). The graph pays where there are
   * many subscriptions of few clusters each; it needs the remembered answers (`answers`, required with a DynamoDB
   * outbox) to ask ARM less.
   */
  listing: z.enum(['arm', 'resourceGraph']).default('arm'),
  /** The Entra tenant profiles name for clusters without their own AAD tenant. @default credential.tenantId */
  tenantId: z.guid({ message: 'must be a tenant id (a GUID)' }).optional(),
});

/**
 * The hub cpsync writes the inventory to: a kubeconfig's cluster, an EKS cluster, a kubeconfig kept in AWS Secrets
 * Manager, or a directory of files. Unset, the directory `inventory` where cpsync is run.
 */
const hub = z.union([
  z.strictObject({
    /** A kubeconfig file that reaches the hub; a relative path is from the configuration file's directory. */
    kubeconfig: z.string().min(1),
    /** The kubeconfig's context to use; unset, its current context. */
    context: z.string().optional(),
  }),
  z.strictObject({
    /** An EKS cluster, reached with tokens signed with cpsync's own AWS credentials (renewed every 10 minutes). */
    eks: z.strictObject({
      /** The EKS cluster's name. */
      clusterName: z.string().min(1),
      stsEndpoint: url.optional(),
      /** The AWS region the cluster is in. */
      region: awsRegion,
      endpoint: url.optional(),
    }),
  }),
  z.strictObject({
    /** The ARN of an AWS Secrets Manager secret holding the hub's kubeconfig (its current context is used). */
    kubeconfigSecretArn: secretArn,
  }),
  z.strictObject({
    /**
     * A directory of files, one per profile, standing for a hub (local runs without a cluster); a relative path
     * is from the configuration file's directory.
     */
    directory: z.string().min(1),
  }),
]);

/**
 * Where cpsync publishes its events: an Amazon EventBridge bus, JSON lines on standard output, or JSON lines
 * appended to a file. Unset, standard output.
 */
const bus = z.union([
  z.strictObject({
    /** An Amazon EventBridge event bus. */
    eventBridge: z.strictObject({
      /** The event bus's name. */
      busName: z.string().min(1),
      /** The bus's AWS region; unset, the region the AWS SDK finds (`AWS_REGION`). */
      region: awsRegion.optional(),
      endpoint: url.optional(),
      /** The `source` of every event put on the bus (what subscribers' rules match). */
      source: z.string().min(1).default('cpsync'),
    }),
  }),
  z.strictObject({
    /** `true`: each event as one JSON line on standard output. */
    stdout: z.literal(true),
  }),
  z.strictObject({
    /** A file each event is appended to as one JSON line; a relative path is from the configuration file's directory. */
    jsonl: z.string().min(1),
  }),
]);

/** How long a processed delivery is remembered by default (seconds). */
export const DEFAULT_IDEMPOTENCY_SECONDS = 3600;

/** The matchers of a namespace or projection rule: every one given must match. */
const clusterMatcher = {
  /** Only clusters of this cloud; unset, any. */
  provider: provider.optional(),
  /** Only clusters of this AWS account id, GCP project id or Azure subscription id; unset, any. */
  account: z.string().min(1).optional(),
  /** Only clusters in this region, as the cloud names it (a zonal GKE cluster: its zone's region); unset, any. */
  region: z.string().min(1).optional(),
  /** Only clusters carrying this tag (GKE: label); unset, any. */
  tag: z
    .strictObject({
      /** The tag's key. */
      key: z.string().min(1),
      /** The tag's value; unset, any value. */
      value: z.string().optional(),
    })
    .optional(),
};

/** The shapes of an account and a region of each cloud, as a rule may spell them (any case; Azure's with spaces). */
const MATCHER_SHAPES = {
  eks: {
    account: { shape: /^\d{12}$/, says: 'an AWS account id (12 digits)' },
    region: { shape: AWS_REGION, says: 'an AWS region such as us-east-1' },
  },
  gke: {
    // A project id, or a domain-scoped one (example.com:project) as a project search may find.
    account: { shape: /^([a-z0-9.-]+\.[a-z]+:)?[a-z][a-z0-9-]{4,28}[a-z0-9]$/, says: 'a GCP project id' },
    region: { shape: /^[a-z]+-[a-z]+\d+$/, says: 'a GCP region such as europe-west4' },
  },
  aks: {
    account: {
      shape: /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/,
      says: 'an Azure subscription id (a GUID)',
    },
    region: { shape: /^[a-z][a-z0-9]+$/, says: 'an Azure location such as westeurope' },
  },
} as const;

/**
 * A rule's account and region must be of a shape their cloud gives (that of its `provider`, or of any cloud): a
 * rule that can match no cluster moves every cluster it was written for into another namespace, and their profiles
 * out of the one it names. Compared as the rule is matched (`matcherOf`: ASCII lower case, no spaces).
 */
function matcherShapes(
  rule: {
    provider?: 'eks' | 'gke' | 'aks' | undefined;
    account?: string | undefined;
    region?: string | undefined;
  },
  context: z.RefinementCtx,
): void {
  const clouds = rule.provider ? [rule.provider] : (['eks', 'gke', 'aks'] as const);
  for (const field of ['account', 'region'] as const) {
    const given = rule[field];
    if (given === undefined) continue;
    const value = foldCase(given.trim()).replace(/\s+/g, '');
    if (clouds.some((cloud) => MATCHER_SHAPES[cloud][field].shape.test(value))) continue;
    context.addIssue({
      code: 'custom',
      path: [field],
      message: `must be ${clouds.map((cloud) => MATCHER_SHAPES[cloud][field].says).join(', or ')}${rule.provider ? ` (the rule's provider is ${rule.provider})` : ''}, got ${JSON.stringify(given)}`,
    });
  }
}

/** EKS: an IAM role ARN (what an access entry's principal is). */
const iamRoleArn = z
  .string()
  .regex(
    /^arn:aws(-[a-z]+)*:iam::\d{12}:role\/[\w+=,.@/-]{1,512}$/,
    'must be an IAM role ARN such as arn:aws:iam::111122223333:role/argocd',
  );
/**
 * GKE: a Google service account's email, or a workload identity federation principal: one principal. A member
 * standing for many (`allUsers`, `allAuthenticatedUsers`, `domain:`, `group:`, `principalSet://`, a project's
 * owners, editors or viewers), in any spelling, is refused by name.
 */
const googlePrincipal = z
  .string()
  .superRefine((value, context) => {
    const form = manyPrincipals(value);
    if (form)
      context.addIssue({
        code: 'custom',
        message: `names more than one principal (${form}); cpsync grants one service account or one workload identity federation principal per consumer`,
        continue: false,
      });
  })
  .regex(
    /^([a-z][a-z0-9-]{4,28}[a-z0-9]@[a-z0-9-]+\.iam\.gserviceaccount\.com|principal:\/\/iam\.googleapis\.com\/projects\/\d+\/locations\/global\/workloadIdentityPools\/[a-z0-9-]{4,32}\/subject\/[^\s]{1,127})$/,
    'must be a service account email (name@project.iam.gserviceaccount.com) or a workload identity federation principal (principal://iam.googleapis.com/projects/<number>/locations/global/workloadIdentityPools/<pool>/subject/<subject>)',
  );
/** AKS: an Entra object id. */
/**
 * Taken in lower case, as Entra issues it and Azure answers it (a role assignment's `principalId`, a member's user
 * name): one identity is one spelling in every comparison and record.
 */
const entraObjectId = z
  .uuid({ message: 'must be an Entra object id (a UUID)' })
  .overwrite((id) => id.toLowerCase());

/** A consumer of the inventory and what it is granted (the `accessGrants` feature). */
const consumer = z.strictObject({
  /** A DNS label of at most 40 characters: its condition `consumers.cpsync.io/<name>` and the mark on its grants. */
  name: z
    .string()
    .regex(/^[a-z0-9]([-a-z0-9]{0,38}[a-z0-9])?$/, 'must be a DNS label of at most 40 characters'),
  /** The inventory namespaces it reads: it is granted every cluster profiled or projected there. */
  namespaces: z.array(dnsLabel).min(1, 'must name at least one inventory namespace'),
  /** view, edit or admin: nothing else can be granted. */
  level: z.enum(['view', 'edit', 'admin'], { message: 'must be view, edit or admin' }),
  /**
   * The member namespaces it is granted in (EKS: a namespace-scoped access policy; GKE, AKS: a RoleBinding in
   * each); unset, the whole cluster.
   */
  memberNamespaces: z.array(dnsLabel).min(1).max(50).optional(),
  /** Its identity on each cloud; a cloud it has none for is not granted (its condition says so). */
  identities: z
    .strictObject({
      /** Its identity on EKS: the IAM role its access entries are for; unset, no EKS cluster is granted. */
      eks: z.strictObject({ roleArn: iamRoleArn }).optional(),
      /** Its identity on GKE: one Google principal; unset, no GKE cluster is granted. */
      gke: z.strictObject({ principal: googlePrincipal }).optional(),
      /** Its identity on AKS: an Entra object; unset, no AKS cluster is granted. */
      aks: z.strictObject({ objectId: entraObjectId }).optional(),
    })
    .refine((ids) => ids.eks || ids.gke || ids.aks, { message: 'must name an identity for eks, gke or aks' }),
});

/** The example subscribers the CDK app deploys when asked (`subscribers`). */
const subscribers = z.strictObject({
  /** The chat notifier: a message per sync to a Slack or Microsoft Teams incoming webhook. */
  chat: z
    .strictObject({
      /** The secret holding the webhook URL (its text, or JSON `{"url": "…"}`). */
      webhookSecretArn: secretArn,
      /** The chat the webhook posts to: `slack` (an incoming-webhook message) or `teams` (an Adaptive Card). */
      format: z.enum(['slack', 'teams'], { message: 'must be slack or teams' }).default('slack'),
      /** How long a sync must be quiet before its message goes (0: a message per batch); SQS delays 900 s at most. */
      quietSeconds: z.number().int().min(0).max(900).default(60),
      /** How long the queue gathers events before the function runs (Lambda's SQS batching window: 300 s at most). */
      batchingWindowSeconds: z.number().int().min(0).max(300).default(30),
      /** The least time between two posts (Slack takes about one message a second per webhook). */
      minIntervalMillis: z.number().int().min(0).max(60_000).default(1000),
    })
    .optional(),
  /** The Argo CD subscriber: a cluster Secret per profile in Argo CD's namespace. */
  argocd: z
    .strictObject({
      /** Argo CD's namespace, where the cluster Secrets go. */
      namespace: dnsLabel.default('argocd'),
      /** The kubeconfig of the cluster Argo CD runs on; unset, the hub (Argo CD runs on the hub). */
      kubeconfigSecretArn: secretArn.optional(),
      /**
       * On a hub reached with a kubeconfig (`hub.kubeconfigSecretArn`, cpsync's own identity): a kubeconfig of the
       * subscriber's own identity on the hub (by default the user `<manager>-argocd`; `cpsync consumers
       * argocd-subscriber` prints its RBAC). Required there: the subscriber never reaches the hub as cpsync. On an
       * EKS hub its function's role is mapped to that user instead (the stack's ArgoCdHubRole output).
       */
      hubKubeconfigSecretArn: secretArn.optional(),
      /** The credential plugin Argo CD runs for each cluster's token. */
      credentialsCommand: z.string().min(1).default('cpsync'),
      /** Arguments added to every cluster's call of the plugin (e.g. `["--role-name", "argocd"]`); none by default. */
      credentialsArgs: z.array(z.string()).default([]),
      /** How often every Secret is rebuilt from the hub. */
      reconcileEveryMinutes: z.number().int().min(1).max(1440).default(60),
      /**
       * What becomes of profiles in a namespace where the hub's admission policy does not keep others from writing
       * them: `refuse` (no Secret made or changed from them; one written from the same profile while the namespace was
       * guarded stays as it was, any other is removed) or `trust` (a hub whose ClusterProfile writers are all trusted).
       */
      unguardedHub: z.enum(['refuse', 'trust'], { message: 'must be refuse or trust' }).default('refuse'),
      /**
       * How long the reconcile keeps the Secret of a profile missing from the hub, in minutes: whoever may delete
       * profiles there must not empty Argo CD of a live cluster (cpsync writes the profile again at its next sync, so
       * make it longer than the sync's schedule). A Deleted event of cpsync's removes the Secret at once. 0: at once.
       */
      missingProfileGraceMinutes: z.number().int().min(0).max(10_080).default(60),
    })
    .optional(),
});

export const configSchema = z.strictObject({
  /**
   * The cluster manager's name: the `x-k8s.io/cluster-manager` label and `spec.clusterManager.name` of every
   * profile cpsync writes (only profiles carrying both are its to update or delete), the start of their names, and
   * the mark on its grants. A DNS-1123 label of at most 30 characters.
   */
  manager: z
    .string()
    .refine((m) => isDns1123Label(m) && m.length <= MAX_MANAGER_LENGTH, {
      message: `must be a DNS-1123 label of at most ${MAX_MANAGER_LENGTH} characters`,
    })
    .default(DEFAULT_MANAGER),
  /**
   * The profiles cpsync writes: the namespaces they go to (rules, projections, ClusterSets), what they copy of the
   * clusters' tags, the names of their access providers, and when a missing cluster's profile goes.
   */
  inventory: z
    .strictObject({
      /** Namespace of the profiles no rule places elsewhere (one namespace = one inventory). */
      namespace: dnsLabel.default(DEFAULT_NAMESPACE),
      /**
       * ClusterSets and the namespaces that stand for them, as `<set>: [<namespace>, …]`; the older
       * `<namespace>: <set>` (a string value) is read too. Parsed into namespace → set.
       */
      clusterSets: z
        .record(z.string().min(1), z.union([z.string().min(1), z.array(dnsLabel).min(1)]))
        .default({})
        .transform((entries, context) => {
          const setOf: Record<string, string> = {};
          for (const [key, value] of Object.entries(entries)) {
            const pairs: Array<[string, string]> = Array.isArray(value)
              ? value.map((namespace): [string, string] => [namespace, key])
              : [[key, value]];
            for (const [namespace, set] of pairs) {
              // The set's name is the value of the namespace's `multicluster.x-k8s.io/clusterset` label.
              if (!isLabelValue(set) || set === '')
                context.addIssue({
                  code: 'custom',
                  path: [key],
                  message: `ClusterSet name ${JSON.stringify(set)} must be a label value (at most 63 letters, digits, -, _ and ., beginning and ending with a letter or digit): it is the namespace's multicluster.x-k8s.io/clusterset label`,
                });
              else if (!Array.isArray(value) && !isDns1123Label(namespace))
                context.addIssue({
                  code: 'custom',
                  path: [key],
                  message: 'must be a DNS-1123 label (a namespace)',
                });
              else if (Object.hasOwn(setOf, namespace) && setOf[namespace] !== set)
                context.addIssue({
                  code: 'custom',
                  path: [key],
                  message: `namespace ${namespace} stands for two ClusterSets (${setOf[namespace]} and ${set}); a namespace is one set`,
                });
              else setOf[namespace] = set;
            }
          }
          return setOf;
        }),
      /** Ordered rules: the first whose matchers all match a cluster chooses its namespace. */
      namespaceRules: z
        .array(
          z
            .strictObject({
              ...clusterMatcher,
              /** The namespace the clusters it matches go to. */
              namespace: dnsLabel,
            })
            .superRefine(matcherShapes),
        )
        .default([]),
      /** The `projections` feature's rules: a cluster they match is also written into their namespaces. */
      projections: z
        .array(
          z
            .strictObject({
              ...clusterMatcher,
              /** The namespaces each cluster it matches is also written into (a copy of its profile in each). */
              namespaces: z.array(dnsLabel).min(1),
            })
            .superRefine(matcherShapes),
        )
        .default([]),
      /** Tag keys copied into `cpsync.io/tag.<key>` properties (`prefix*` matches a prefix); no tag otherwise. */
      tagAllowList: z.array(z.string().min(1).max(239)).default([]),
      /**
       * The `tagLabels` feature: tags copied to profile labels `<prefix><tag key>`. A tag whose label would not be
       * a valid label key, would be one of cpsync's own, or would fall in a domain Kubernetes or cpsync keeps, is
       * refused here, naming it.
       */
      labels: z
        .strictObject({
          /** Tag keys copied to labels (`prefix*` matches a prefix). */
          fromTags: z.array(z.string().min(1).max(317)).default([]),
          /** Put before each tag key; `""` for tag keys that are label keys already. */
          prefix: z.string().max(316).default(DEFAULT_TAG_LABEL_PREFIX),
        })
        .prefault({})
        .superRefine((labels, context) => {
          const prefix = refusedTagLabelPrefix(labels.prefix);
          if (prefix !== undefined) {
            context.addIssue({ code: 'custom', path: ['prefix'], message: prefix });
            return;
          }
          labels.fromTags.forEach((entry, index) => {
            const why = refusedAllowListEntry(entry, labels.prefix);
            if (why !== undefined)
              context.addIssue({ code: 'custom', path: ['fromTags', index], message: why });
          });
        }),
      /** Each cloud's entry name in `status.accessProviders`: what the consumers' credential plugins are called. */
      accessProviderNames: z
        .strictObject({
          /** The entry's name on EKS clusters' profiles. */
          eks: z.string().min(1).max(253).default('eks'),
          /** The entry's name on GKE clusters' profiles. */
          gke: z.string().min(1).max(253).default('gke'),
          /** The entry's name on AKS clusters' profiles. */
          aks: z.string().min(1).max(253).default('aks'),
        })
        .prefault({}),
      /** The `privateEndpoints` feature under its older name (`features.privateEndpoints` is the one switch). */
      preferPrivateEndpoints: z.boolean().optional(),
      /** Consecutive complete listings a cluster may be missing from before its profile is deleted. */
      deletionGraceListings: z.number().int().min(1).max(100).default(DEFAULT_DELETION_GRACE_LISTINGS),
    })
    .prefault({}),
  /** Who reads the inventory and what each is granted on its clusters (the `accessGrants` feature). */
  consumers: z
    .array(consumer)
    .default([])
    .superRefine((list, context) => {
      const seen = new Set<string>();
      // One identity is one grant on a cluster (EKS: one access entry per principal; GKE, AKS: one binding's
      // subject): two consumers naming it would each find the other's grant in its way. Compared as the clouds
      // compare them: IAM and Google names in any case.
      const holders = new Map<string, string>();
      list.forEach((c, index) => {
        if (seen.has(c.name))
          context.addIssue({ code: 'custom', path: [index, 'name'], message: `${c.name} is named twice` });
        seen.add(c.name);
        const identities: Array<[string, string, string | undefined]> = [
          ['eks', 'roleArn', c.identities.eks?.roleArn],
          ['gke', 'principal', c.identities.gke?.principal],
          ['aks', 'objectId', c.identities.aks?.objectId],
        ];
        for (const [cloud, field, identity] of identities) {
          if (identity === undefined) continue;
          const key = `${cloud}:${foldCase(identity)}`;
          const holder = holders.get(key);
          if (holder !== undefined && holder !== c.name)
            context.addIssue({
              code: 'custom',
              path: [index, 'identities', cloud, field],
              message: `${identity} is consumer ${holder}'s identity too; one identity is one consumer (merge them, or give each its own)`,
            });
          else holders.set(key, c.name);
        }
      });
    }),
  /** Optional features (core/domain/features.ts): `<name>: on | off`; unset, each has its default. */
  features: z
    .record(z.string(), z.unknown())
    .default({})
    .transform((entries, context) => {
      const set: Record<FeatureName, boolean> = { ...DEFAULT_FEATURE_GATES };
      for (const [name, value] of Object.entries(entries)) {
        if (!(FEATURE_NAMES as readonly string[]).includes(name)) {
          context.addIssue({
            code: 'custom',
            path: [name],
            message: `no such feature (the features are ${FEATURE_NAMES.join(', ')})`,
          });
          continue;
        }
        const state =
          value === true || value === 'on' ? true : value === false || value === 'off' ? false : undefined;
        if (state === undefined)
          context.addIssue({
            code: 'custom',
            path: [name],
            message: `must be on or off, got ${JSON.stringify(value)}`,
          });
        else set[name as FeatureName] = state;
      }
      return set;
    }),
  /**
   * The clouds, each configured, or `off`: a provider set to `off` is not listed, and the profiles cpsync
   * wrote for it are deleted by the next full sync of the `cpsync sync` command (deployed, the scheduled enumerator
   * reports them as orphans, and `cpsync prune --orphans --yes` deletes them); left out of the configuration, they are
   * only reported.
   */
  providers: z
    .strictObject({
      eks: z.union([z.literal('off'), eks]).optional(),
      gke: z.union([z.literal('off'), gke]).optional(),
      aks: z.union([z.literal('off'), aks]).optional(),
    })
    .prefault({})
    .transform(({ eks, gke, aks }) => ({
      ...(eks && eks !== 'off' ? { eks } : {}),
      ...(gke && gke !== 'off' ? { gke } : {}),
      ...(aks && aks !== 'off' ? { aks } : {}),
      /** Providers set to `off`. */
      off: (
        [
          ['eks', eks],
          ['gke', gke],
          ['aks', aks],
        ] as const
      )
        .filter(([, value]) => value === 'off')
        .map(([name]) => name),
    })),
  hub: hub.optional(),
  bus: bus.optional(),
  /**
   * Where events not yet published and each run's write-ahead intents wait: a directory of files or a DynamoDB
   * table. Unset, a directory of the configuration's own (its manager and hub) under `.cpsync/` where cpsync is
   * run: `.cpsync/outbox` when an earlier version made it and no other configuration has it, else
   * `.cpsync/state-<hash>`.
   */
  outbox: z
    .union([
      z.strictObject({
        /**
         * A directory (a relative path is from the configuration file's directory); the intents go in its
         * `intents/`, and the ledger and the remembered answers, when they have no table, in `grants/` and
         * `answers/`. It holds one configuration's state: its `owner` file names the manager and the hub, and a
         * configuration of another manager or hub is refused it.
         */
        directory: z.string().min(1),
      }),
      z.strictObject({
        /** The DynamoDB table's name (it holds the intents too). */
        table: z.string().min(1),
        endpoint: url.optional(),
      }),
    ])
    .optional(),
  /**
   * Where cpsync keeps what it granted (the `accessGrants` feature): a DynamoDB table the stack owns, with
   * partition key `cluster` and an index `byAccount` (partition key `account`). Unset, the ledger is the
   * `grants/` folder of the outbox's directory; with a DynamoDB outbox it must be set while the feature is on
   * or consumers are configured. Only cpsync writes it, and it alone says what cpsync must take back.
   */
  ledger: z
    .strictObject({
      /** The DynamoDB table's name. */
      table: z.string().min(1),
      endpoint: url.optional(),
    })
    .optional(),
  /**
   * Where the sources remember the clouds' per-cluster answers (AKS CAs, EKS node groups) so that a cluster the
   * listing shows unchanged is not asked again until its answer is old: a DynamoDB table the stack owns, with
   * partition key `cluster` and an index `byScope` (partition key `scope`, sort key `region`). Unset, the
   * `answers/` folder of the outbox's directory; with a DynamoDB outbox and no table, every sync asks. Only
   * cpsync writes it; it never decides what is listed or deleted.
   */
  answers: z
    .strictObject({
      /** The DynamoDB table's name. */
      table: z.string().min(1),
      endpoint: url.optional(),
    })
    .optional(),
  /**
   * Where cpsync counts the complete listings in a row that did not show each cluster (the deletion grace,
   * `inventory.deletionGraceListings`): a DynamoDB table the stack owns, with partition key `cluster` and an index
   * `byScope` (partition key `scope`, sort key `region`). Unset, the `absences/` folder of the outbox's directory;
   * with a DynamoDB outbox it must be set while a cluster may be missed by more than one listing. Only cpsync
   * writes it: a profile's `cpsync.io/missed-listings` on the hub shows the count and is never read back.
   */
  absences: z
    .strictObject({
      /** The DynamoDB table's name. */
      table: z.string().min(1),
      endpoint: url.optional(),
    })
    .optional(),
  /**
   * Lambda functions only: where duplicate deliveries are recognised (Powertools idempotency records in a
   * DynamoDB table with partition key `id` and TTL attribute `expiration`). Unset: every delivery is
   * processed, which is harmless (an unchanged cluster is neither written nor announced) but not free.
   */
  idempotency: z
    .strictObject({
      /** The DynamoDB table's name. */
      table: z.string().min(1),
      endpoint: url.optional(),
      /** How long a processed delivery is remembered. */
      expiresAfterSeconds: z.number().int().min(60).max(604_800).default(DEFAULT_IDEMPOTENCY_SECONDS),
    })
    .optional(),
  /** What the webhook function accepts (SPEC §5). */
  webhook: z
    .strictObject({
      /** Azure Event Grid: deliveries must carry this key (`?key=` on the endpoint URL, or the `x-cpsync-key` header). */
      azure: z.strictObject({ key: secretRef }).optional(),
      /** GCP Pub/Sub push: the Google-signed OIDC token must have this audience and service-account email. */
      gcp: z
        .strictObject({
          /** The audience (`aud`) the push subscription's tokens are issued for. */
          audience: z.string().min(1),
          /** The service account the push subscription signs as: a token's verified `email` must be this one. */
          serviceAccountEmail: z.email({ message: 'must be a service-account email' }),
          jwksUri: url.default('https://www.googleapis.com/oauth2/v3/certs'),
          /** The issuers (`iss`) a token may name: Google's, in its two spellings. */
          issuers: z.array(z.string().min(1)).default(['https://accounts.google.com', 'accounts.google.com']),
        })
        .optional(),
    })
    .prefault({}),
  /** The `memberProbe` feature: how member clusters are read (see adapters/member/). */
  memberProbe: z
    .strictObject({
      /** Each member is read once in this time (a new profile's member at once). */
      everyMinutes: z.number().int().min(1).max(10_080).default(60),
      /** The schedule's period: a run reads the members of its slot, everyMinutes / slotMinutes slots in turn. */
      slotMinutes: z.number().int().min(1).max(1440).default(15),
      /** One member's reading, every request included. */
      timeoutSeconds: z.number().int().min(1).max(60).default(10),
      /** All the reading of one scope's members in a run; what is not read by then waits for a later run. */
      budgetSeconds: z.number().int().min(1).max(600).default(20),
      /** Members read at once (per scope). */
      concurrency: z.number().int().min(1).max(256).default(16),
      /** EKS: a role to assume in the cluster's account for the token; unset, the run's own identity. */
      eksRoleName: iamRoleName.optional(),
    })
    .prefault({})
    .refine((probe) => probe.slotMinutes <= probe.everyMinutes, {
      message: 'slotMinutes must not be longer than everyMinutes',
      path: ['slotMinutes'],
    })
    .refine((probe) => probe.timeoutSeconds <= probe.budgetSeconds, {
      message: 'timeoutSeconds must not be longer than budgetSeconds',
      path: ['timeoutSeconds'],
    }),
  /** How a sync runs: how many scopes it lists at once, and how long its steps may take. */
  sync: z
    .strictObject({
      /** Scopes listed at once. */
      concurrency: z.number().int().min(1).max(64).default(4),
      /** How long a run's write-ahead intents stay its own (longer than any run's apply phase). */
      intentLeaseSeconds: z.number().int().min(0).max(86_400).default(900),
      /**
       * Time one scope's listing may take, every call and retry included; then the scope fails (Timeout). In the
       * scope worker it ends 30 s before the function would, when that comes first (the function's timeout is 5 min).
       */
      scopeTimeoutSeconds: z.number().int().min(1).max(3600).default(300),
      /** Time one request to a cloud may take before it is abandoned (and retried by the SDK). */
      requestTimeoutSeconds: z.number().int().min(1).max(600).default(30),
      /**
       * Time to wait for an account another run is applying (a whole run waits for the account's one-cluster syncs
       * under way too) before its scopes fail (Busy).
       */
      leaseWaitSeconds: z.number().int().min(0).max(900).default(60),
    })
    .prefault({}),
  /**
   * Following a cluster the clouds are still changing (creating, updating, deleting…) until it settles:
   * looked at again after `firstDelaySeconds`, the wait doubling up to `maxDelaySeconds`, for at most
   * `maxMinutes` (then the schedule takes over); EKS clusters on the schedule of `eks`.
   */
  follow: z
    .strictObject({
      /** The first look at a cluster in change, after this long (GKE and AKS; EKS: `eks`). */
      firstDelaySeconds: z.number().int().min(1).max(900).default(10),
      // The longest wait is how long a cluster may be ready before cpsync sees it: 20 s keeps a new cluster's
      // profile usable within half a minute of the cloud's ready, for a few looks a minute (see BENCHMARKS.md).
      maxDelaySeconds: z.number().int().min(1).max(900).default(20),
      /** How long a cluster is followed at most; then the schedule takes over. */
      maxMinutes: z
        .number()
        .int()
        .min(1)
        .max(24 * 60)
        .default(180),
      /**
       * EKS sends no event when an operation ends: its clusters are looked at more often as the operation
       * nears the time EKS typically takes (core/domain/lookSchedule.ts). Creation averages 10–15 minutes
       * (the control plane's provisioning), a version update "a few minutes" to a quarter of an hour, a
       * deletion 5–10 minutes.
       */
      eks: z
        .strictObject({
          /** How long each operation typically takes, in seconds (a node group's change counts as an update). */
          typicalSeconds: z
            .strictObject({
              /** A cluster's creation (the default: 12 minutes). */
              create: z.number().int().min(1).max(86_400).default(720),
              /** A cluster's or a node group's update (the default: 10 minutes). */
              update: z.number().int().min(1).max(86_400).default(600),
              /** A cluster's deletion (the default: 8 minutes). */
              delete: z.number().int().min(1).max(86_400).default(480),
            })
            .prefault({}),
          /** The shortest wait between looks, at the typical time. */
          minDelaySeconds: z.number().int().min(1).max(900).default(5),
          /** The longest wait, far from the typical time. */
          maxDelaySeconds: z.number().int().min(1).max(900).default(60),
          /** The wait as a share of the time left to (or past) the typical time. */
          tightening: z.number().gt(0).max(1).default(0.25),
          /** The most looks one chase makes; then the schedule takes over. */
          maxLooks: z.number().int().min(1).max(1000).default(60),
        })
        .refine((eks) => eks.minDelaySeconds <= eks.maxDelaySeconds, {
          message: 'minDelaySeconds must not be longer than maxDelaySeconds',
          path: ['minDelaySeconds'],
        })
        .prefault({}),
    })
    .refine((follow) => follow.firstDelaySeconds <= follow.maxDelaySeconds, {
      message: 'firstDelaySeconds must not be longer than maxDelaySeconds',
      path: ['firstDelaySeconds'],
    })
    .prefault({}),
  /**
   * The CDK app only: the example subscribers it deploys beside cpsync (infra/subscribers.ts), each when its
   * section is given. cpsync's own functions are not told of them.
   */
  subscribers: subscribers.optional(),
});

export type CpsyncConfig = z.infer<typeof configSchema>;

/** A configuration that does not satisfy the schema; `issues` name each bad field and what was expected. */
/** Why a configuration with a DynamoDB outbox needs `absences`. */
export const ABSENCES_REQUIRED =
  'absences: is required with a DynamoDB outbox while inventory.deletionGraceListings is more than 1 (the table where cpsync counts the listings that missed each cluster)';

export class ConfigError extends CpsyncError {
  readonly issues: string[];
  constructor(issues: string[], source: string) {
    super(
      `invalid configuration${source ? ` in ${source}` : ''}:\n${issues.map((i) => `  - ${i}`).join('\n')}`,
    );
    this.issues = issues;
  }
}

function pathOf(path: readonly PropertyKey[]): string {
  return (
    path.map((p, i) => (typeof p === 'number' ? `[${p}]` : `${i === 0 ? '' : '.'}${String(p)}`)).join('') ||
    '(root)'
  );
}

interface Issue {
  code?: string;
  path: readonly PropertyKey[];
  message: string;
  errors?: Issue[][];
}

/**
 * Messages for an issue. For a value that matches none of a union's forms, the form it came
 * closest to (the one whose problems lie deepest) speaks for it.
 */
function describe(issue: Issue, prefix: readonly PropertyKey[] = []): string[] {
  const path = [...prefix, ...issue.path];
  if (issue.code === 'invalid_union' && issue.errors && issue.errors.length > 0) {
    const depth = (branch: Issue[]) =>
      Math.max(...branch.map((i) => i.path.length + (i.code === 'unrecognized_keys' ? -1 : 0)));
    const best = [...issue.errors].sort((a, b) => depth(b) - depth(a) || a.length - b.length)[0]!;
    if (depth(best) > 0) return best.flatMap((i) => describe(i, path));
    return [
      `${pathOf(path)}: matches none of its accepted forms (${issue.errors.map((b) => b.map((i) => i.message).join(', ')).join(' | ')})`,
    ];
  }
  return [`${pathOf(path)}: ${issue.message}`];
}

/** A region outside the `aws` partition, if `region` is one. */
const otherPartition = (region: string | undefined) =>
  region !== undefined && AWS_REGION.test(region) && awsPartitionOf(region).name !== 'aws'
    ? region
    : undefined;

/**
 * The home region: as configured. Unset: the first listed region when the regions are of another partition than
 * `aws`; with no regions listed, `environmentRegion` (`ambientAwsRegion`: AWS_REGION, a function's own region in
 * Lambda, or the AWS profile's) when it is of another partition; else `us-east-1`. ConfigError names each listed
 * region of another partition than the home region's.
 */
export function eksHomeRegion(
  eks: { homeRegion?: string | undefined; regions?: string[] | undefined },
  source = '',
  environmentRegion?: string,
): string {
  const home =
    eks.homeRegion ??
    (eks.regions === undefined ? otherPartition(environmentRegion) : otherPartition(eks.regions[0])) ??
    'us-east-1';
  const partition = awsPartitionOf(home).name;
  const issues = (eks.regions ?? []).flatMap((region, index) => {
    const other = awsPartitionOf(region).name;
    return other === partition
      ? []
      : [
          `providers.eks.regions[${index}]: ${region} is in the ${other} partition, but the home region ${home}${eks.homeRegion ? ' (providers.eks.homeRegion)' : ''} is in ${partition}: one cpsync lists one partition, whose credentials and member roles it uses (list ${other}'s regions from a cpsync configured for it)`,
        ];
  });
  if (issues.length > 0) throw new ConfigError(issues, source);
  return home;
}

/**
 * Whether two Secrets Manager ARNs, each complete or partial, may name the same secret: the same ARN once a complete
 * one's suffix (`-` and six random characters, which a partial ARN leaves out) is taken off either.
 */
function sameSecret(a: string, b: string): boolean {
  const base = (arn: string) => arn.replace(/-[A-Za-z0-9]{6}$/, '');
  return a === b || base(a) === b || a === base(b) || base(a) === base(b);
}

/** Validates a parsed document; throws ConfigError naming every bad field. */
export function parseConfig(document: unknown, source = ''): CpsyncConfig {
  const result = configSchema.safeParse(document ?? {});
  if (!result.success)
    throw new ConfigError(
      result.error.issues.flatMap((issue) => describe(issue as Issue)),
      source,
    );
  // What no one field says alone, checked once every field reads: every problem named at once.
  const issues: string[] = [];
  // The privateEndpoints feature under its older name: taken when the feature itself is not set.
  const older = result.data.inventory.preferPrivateEndpoints;
  const given = (document as { features?: Record<string, unknown> } | null)?.features?.privateEndpoints;
  if (older !== undefined && given !== undefined && older !== result.data.features.privateEndpoints)
    issues.push(
      `features.privateEndpoints: is ${result.data.features.privateEndpoints ? 'on' : 'off'} but inventory.preferPrivateEndpoints (its older name) is ${older}; set one`,
    );
  else if (older !== undefined) result.data.features.privateEndpoints = older;
  const { inventory } = result.data;
  const written = (ns: string) =>
    ns === inventory.namespace ||
    inventory.namespaceRules.some((r) => r.namespace === ns) ||
    inventory.projections.some((r) => r.namespaces.includes(ns));
  const unknown = Object.keys(inventory.clusterSets).filter((ns) => !written(ns));
  if (unknown.length > 0)
    issues.push(
      `inventory.clusterSets: ${unknown.join(', ')} is not the inventory namespace nor any namespace or projection rule's namespace`,
    );
  issues.push(
    ...result.data.consumers.flatMap((c, index) =>
      c.namespaces
        .map((ns, at) => [ns, at] as const)
        .filter(([ns]) => !written(ns))
        .map(
          ([ns, at]) =>
            `consumers[${index}].namespaces[${at}]: ${ns} is not the inventory namespace nor any namespace or projection rule's namespace (cpsync writes no profile there)`,
        ),
    ),
  );
  // The Argo CD subscriber never reaches the hub as cpsync: not with the hub's own kubeconfig.
  const hubSecret =
    result.data.hub && 'kubeconfigSecretArn' in result.data.hub
      ? result.data.hub.kubeconfigSecretArn
      : undefined;
  const argocd = result.data.subscribers?.argocd;
  for (const key of ['kubeconfigSecretArn', 'hubKubeconfigSecretArn'] as const)
    if (hubSecret && argocd?.[key] && sameSecret(argocd[key], hubSecret))
      issues.push(
        `subscribers.argocd.${key}: may name the hub's own kubeconfig (hub.kubeconfigSecretArn, its ARN read complete or partial), cpsync's identity; the Argo CD subscriber reaches the hub as an identity of its own: give it a kubeconfig of that identity (subscribers.argocd.hubKubeconfigSecretArn)`,
      );
  const granting = result.data.features.accessGrants || result.data.consumers.length > 0;
  if (granting && result.data.outbox && 'table' in result.data.outbox && !result.data.ledger)
    issues.push(
      'ledger: is required with a DynamoDB outbox while accessGrants is on or consumers are configured (the table where cpsync keeps what it granted)',
    );
  if (
    result.data.outbox &&
    'table' in result.data.outbox &&
    !result.data.absences &&
    result.data.inventory.deletionGraceListings > 1
  )
    issues.push(ABSENCES_REQUIRED);
  // The home region and every listed region in one partition (the home region where the regions leave it open).
  if (result.data.providers.eks)
    try {
      eksHomeRegion(result.data.providers.eks, source);
    } catch (error) {
      if (!(error instanceof ConfigError)) throw error;
      issues.push(...error.issues);
    }
  const aks = result.data.providers.aks;
  if (
    aks?.listing === 'resourceGraph' &&
    result.data.outbox &&
    'table' in result.data.outbox &&
    !result.data.answers
  )
    issues.push(
      "answers: is required with a DynamoDB outbox while providers.aks.listing is resourceGraph (the table where ARM's answers are remembered: without it each sync reads every AKS cluster from ARM, twice the calls of listing: arm)",
    );
  if (issues.length > 0) throw new ConfigError(issues, source);
  return result.data;
}

/**
 * The document form of a parsed configuration: what `parseConfig` reads back as the same configuration.
 * The stack writes it into each function's `CPSYNC_CONFIG`, where the functions parse it with the same
 * strict schema, so nothing the schema's transforms add (`providers.off`) may stay in it.
 */
export function configDocument(config: CpsyncConfig): Record<string, unknown> {
  const { off, ...providers } = config.providers;
  return {
    ...config,
    providers: { ...providers, ...Object.fromEntries(off.map((name) => [name, 'off'])) },
  };
}

/** A rule's matchers, without the ones left unset. */
function matcherOf(rule: z.infer<z.ZodObject<typeof clusterMatcher>>): ClusterMatcher {
  return {
    ...(rule.provider ? { provider: rule.provider } : {}),
    // As the clouds' answers spell them (scopes.ts): an account in ASCII lower case (AWS ids are digits), a region
    // in lower case without spaces (`West Europe` is `westeurope`); a rule spelled otherwise still matches.
    ...(rule.account ? { account: foldCase(rule.account.trim()) } : {}),
    ...(rule.region ? { region: foldCase(rule.region.trim()).replace(/\s+/g, '') } : {}),
    ...(rule.tag
      ? {
          tag:
            rule.tag.value === undefined
              ? { key: rule.tag.key }
              : { key: rule.tag.key, value: rule.tag.value },
        }
      : {}),
  };
}

/** The core's inventory options from a configuration. */
export function inventoryOptionsOf(config: CpsyncConfig): InventoryOptions {
  const { inventory } = config;
  return {
    manager: config.manager,
    namespace: inventory.namespace,
    namespaceRules: inventory.namespaceRules.map((rule) => ({
      ...matcherOf(rule),
      namespace: rule.namespace,
    })),
    projections: inventory.projections.map((rule) => ({
      ...matcherOf(rule),
      namespaces: [...new Set(rule.namespaces)],
    })),
    clusterSets: inventory.clusterSets,
    tagAllowList: inventory.tagAllowList,
    labels: { fromTags: inventory.labels.fromTags, prefix: inventory.labels.prefix },
    accessProviderNames: inventory.accessProviderNames,
    features: config.features,
    consumers: config.consumers.map((c) => ({
      name: c.name,
      namespaces: [...new Set(c.namespaces)],
      level: c.level,
      ...(c.memberNamespaces ? { memberNamespaces: [...new Set(c.memberNamespaces)] } : {}),
      identities: {
        ...(c.identities.eks ? { eks: c.identities.eks.roleArn } : {}),
        ...(c.identities.gke ? { gke: c.identities.gke.principal } : {}),
        ...(c.identities.aks ? { aks: c.identities.aks.objectId } : {}),
      },
    })),
    deletionGraceListings: inventory.deletionGraceListings,
    localClouds: (['eks', 'gke', 'aks'] as const).filter((cloud) => {
      const endpoint = config.providers[cloud]?.endpoint;
      return endpoint !== undefined && LOOPBACK.test(new URL(endpoint).hostname);
    }),
  };
}
