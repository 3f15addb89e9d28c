/**
 * The admission policy that bounds the Argo CD subscriber's writes in Argo CD's namespace, where its Role lets it
 * write every Secret (RBAC cannot name Secrets by label):
 *   - only the subscriber's identity creates or changes a Secret of its manager (labelled
 *     `app.kubernetes.io/managed-by: cpsync` and `x-k8s.io/cluster-manager: <manager>`), so no other writer there can
 *     plant or rewrite the credentials it hands Argo CD;
 *   - nor does anyone else make a Secret pass for one of an earlier version's (labelled managed-by cpsync, naming no
 *     manager), which the subscriber would take for its own (it writes those over from the hub at its next write);
 *   - the subscriber creates, changes and deletes nothing else: no Argo CD settings (`argocd-secret`), repository
 *     credentials or other managers' clusters (a Secret of cpsync's made before Secrets named their manager may be
 *     changed or deleted by it: it labels those at its next write);
 *   - what it writes is an Opaque cluster Secret (`argocd.argoproj.io/secret-type: cluster`) of the keys it writes: `name`,
 *     `server` (https) and `config`, nothing that moves the cluster into a project or narrows its namespaces.
 * What the `config` says (the command Argo CD runs) is not bounded here: admission sees a Secret's data as base64
 * text, and Kubernetes' CEL has no base64 decoding (docs/security.md, "Not yet bounded"). Deletions by others are not
 * matched (RBAC decides who may delete). Plain data, made from the settings alone.
 */
import {
  ARGOCD_SECRET_TYPE_LABEL,
  LABEL_CLUSTER_MANAGER,
  LABEL_MANAGED_BY,
  MANAGED_BY_CPSYNC,
} from '../../core/domain/constants.ts';
import { celString } from '../shared/celLiteral.ts';

/** A Kubernetes object, as the consumers' manifests are. */
export interface PolicyManifest {
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels: Record<string, string> };
  spec: Record<string, unknown>;
  [key: string]: unknown;
}

/** Who the subscriber is on the cluster Argo CD runs on. */
export type SecretsWriter =
  { kind: 'User' | 'Group'; name: string } | { kind: 'ServiceAccount'; namespace: string; name: string };

export interface SecretsPolicyOptions {
  /** The policy's and its binding's name. */
  name: string;
  /** The subscriber's identity. */
  writer: SecretsWriter;
  /** The configuration's `inventory.manager`. */
  manager: string;
  /** Argo CD's namespace. */
  namespace: string;
}

/**
 * A Secret's data as admission sees it: base64 text (Kubernetes' CEL has no base64 decoding). `https://` is 8 bytes:
 * its first 6 encode as `aHR0cHM6`, the next two with the third byte after them as `Ly` and one of `8`, `9`, `+`, `/`
 * (the 6 bits of which the last 4 are the second `/`'s low bits, 1111); so this matches the encoding of every text
 * beginning `https://` and of no other.
 */
export const HTTPS_BASE64 = '^aHR0cHM6Ly[89+/]';

function byWriter(writer: SecretsWriter): string {
  if (writer.kind === 'Group') return `${celString(writer.name)} in request.userInfo.groups`;
  const user =
    writer.kind === 'ServiceAccount'
      ? `system:serviceaccount:${writer.namespace}:${writer.name}`
      : writer.name;
  return `request.userInfo.username == ${celString(user)}`;
}

const spelled = (writer: SecretsWriter) =>
  writer.kind === 'ServiceAccount'
    ? `the service account ${writer.namespace}/${writer.name}`
    : `the ${writer.kind === 'User' ? 'user' : 'group'} ${writer.name}`;

/** The policy and its binding (one name for both), bound in Argo CD's namespace alone. */
export function argocdSecretsPolicy(options: SecretsPolicyOptions): PolicyManifest[] {
  const { name, writer, manager, namespace } = options;
  const labels = { 'app.kubernetes.io/name': 'cpsync' };
  const who = celString(spelled(writer));
  const labelsOf = (o: string) => `${o} != null && has(${o}.metadata.labels) ? ${o}.metadata.labels : {}`;
  const managed = (l: string) =>
    `${celString(LABEL_MANAGED_BY)} in ${l} && ${l}[${celString(LABEL_MANAGED_BY)}] == ${celString(MANAGED_BY_CPSYNC)}`;
  const managers = (l: string) =>
    `${managed(l)} && ${celString(LABEL_CLUSTER_MANAGER)} in ${l} && ${l}[${celString(LABEL_CLUSTER_MANAGER)}] == variables.manager`;
  const policy = {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicy',
    metadata: { name, labels },
    spec: {
      failurePolicy: 'Fail',
      matchConstraints: {
        resourceRules: [
          {
            apiGroups: [''],
            apiVersions: ['v1'],
            operations: ['CREATE', 'UPDATE', 'DELETE'],
            resources: ['secrets'],
          },
        ],
      },
      variables: [
        { name: 'manager', expression: celString(manager) },
        { name: 'bySubscriber', expression: byWriter(writer) },
        { name: 'labels', expression: labelsOf('object') },
        { name: 'oldLabels', expression: labelsOf('oldObject') },
        { name: 'managers', expression: `object != null && ${managers('variables.labels')}` },
        { name: 'wasManagers', expression: `oldObject != null && ${managers('variables.oldLabels')}` },
        // Made before Secrets named their manager: cpsync's, of no manager named.
        {
          name: 'unnamed',
          expression: `object != null && ${managed('variables.labels')} && !(${celString(LABEL_CLUSTER_MANAGER)} in variables.labels)`,
        },
        {
          name: 'wasUnnamed',
          expression: `oldObject != null && ${managed('variables.oldLabels')} && !(${celString(LABEL_CLUSTER_MANAGER)} in variables.oldLabels)`,
        },
        { name: 'data', expression: 'object != null && has(object.data) ? object.data : {}' },
      ],
      validations: [
        {
          expression:
            "variables.bySubscriber || request.operation == 'DELETE' || !(variables.managers || variables.wasManagers)",
          messageExpression: `'only ' + ${who} + ' may create or change the Argo CD cluster Secrets of manager ' + variables.manager + '; ' + request.userInfo.username + ' may not'`,
          reason: 'Forbidden',
        },
        // Nor does anyone else make a Secret that passes for one of an earlier version (cpsync's, naming no
        // manager), which the subscriber would take for its own.
        {
          expression:
            "variables.bySubscriber || request.operation == 'DELETE' || !variables.unnamed || variables.wasUnnamed",
          messageExpression: `'only ' + ${who} + ' may make a Secret labelled ${LABEL_MANAGED_BY}: ${MANAGED_BY_CPSYNC}; ' + request.userInfo.username + ' may not'`,
          reason: 'Forbidden',
        },
        {
          expression:
            '!variables.bySubscriber || ((object == null || variables.managers) && (oldObject == null || variables.wasManagers || variables.wasUnnamed))',
          messageExpression: `${who} + ' writes only the Argo CD cluster Secrets of manager ' + variables.manager + ' (labelled ${LABEL_MANAGED_BY}: ${MANAGED_BY_CPSYNC} and ${LABEL_CLUSTER_MANAGER}: ' + variables.manager + '), not Secret ' + (object != null ? object.metadata.name : oldObject.metadata.name)`,
          reason: 'Forbidden',
        },
        {
          expression: `!variables.bySubscriber || object == null || (object.type == 'Opaque' && ${celString(ARGOCD_SECRET_TYPE_LABEL)} in variables.labels && variables.labels[${celString(ARGOCD_SECRET_TYPE_LABEL)}] == 'cluster' && variables.data.all(k, k in ['name', 'server', 'config']) && 'config' in variables.data && 'server' in variables.data && string(variables.data.server).matches(${celString(HTTPS_BASE64)}))`,
          messageExpression: `${who} + ' writes Argo CD cluster Secrets (${ARGOCD_SECRET_TYPE_LABEL}: cluster) of type Opaque, of a name, an https server and a config only; not Secret ' + object.metadata.name`,
          reason: 'Forbidden',
        },
      ],
    },
  };
  const binding = {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicyBinding',
    metadata: { name, labels },
    spec: {
      policyName: name,
      validationActions: ['Deny'],
      matchResources: {
        namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': namespace } },
      },
    },
  };
  return [policy, binding];
}
