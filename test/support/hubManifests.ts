/**
 * The shipped hub manifests on the shared test hub. The admission policy (adapters/hub/manifests/admission-policy.yaml)
 * is installed as shipped except for its binding's match, which is narrowed to the namespaces a test labels for it
 * (none, unless the test names one), so that no other test's writes meet it; the RBAC (rbac.yaml) objects a test
 * needs are made when absent. The test removes what it made, pass or fail.
 */
import { readFileSync } from 'node:fs';
import {
  AdmissionregistrationV1Api,
  ApiException,
  KubernetesObjectApi,
  PatchStrategy,
  type KubeConfig,
  type KubernetesObject,
  type V1ValidatingAdmissionPolicy,
  type V1ValidatingAdmissionPolicyBinding,
} from '@kubernetes/client-node';
import { parseAllDocuments } from 'yaml';

const RBAC_FILE = new URL('../../adapters/hub/manifests/rbac.yaml', import.meta.url);
const ADMISSION_POLICY_FILE = new URL('../../adapters/hub/manifests/admission-policy.yaml', import.meta.url);

/** The label whose value a narrowed binding selects namespaces by. */
export const POLICY_NAMESPACE_LABEL = 'test.cpsync.io/admission-policy';

/** The policy and its binding, as the shipped file has them. */
function shippedAdmissionPolicy(): {
  policy: V1ValidatingAdmissionPolicy;
  binding: V1ValidatingAdmissionPolicyBinding;
} {
  const documents = parseAllDocuments(readFileSync(ADMISSION_POLICY_FILE, 'utf8')).map(
    (document) => document.toJS() as { kind: string },
  );
  const policy = documents.find((d) => d.kind === 'ValidatingAdmissionPolicy');
  const binding = documents.find((d) => d.kind === 'ValidatingAdmissionPolicyBinding');
  if (!policy || !binding)
    throw new Error(`${ADMISSION_POLICY_FILE.pathname} lacks the policy or its binding`);
  return {
    policy: policy as V1ValidatingAdmissionPolicy,
    binding: binding as V1ValidatingAdmissionPolicyBinding,
  };
}

export interface InstalledPolicy {
  policy: V1ValidatingAdmissionPolicy;
  binding: V1ValidatingAdmissionPolicyBinding;
  /** Deletes the binding and the policy (either may already be gone). */
  remove(): Promise<void>;
}

/**
 * The policy as shipped, bound in every namespace, for the admin (`cpsync-admin`, whom the tests' functions and CLI
 * write the hub as): `installAdmissionPolicy(admin, EVERYWHERE_FOR_ADMIN)`.
 */
export const EVERYWHERE_FOR_ADMIN = {
  identity: 'cpsync-admin',
  binding: (b: V1ValidatingAdmissionPolicyBinding) => ({
    ...b,
    spec: { ...b.spec!, matchResources: undefined },
  }),
};

/**
 * Creates the shipped policy and its binding, the binding matching only namespaces labelled
 * `POLICY_NAMESPACE_LABEL: <selects>` (without `selects`, the policy is in place but enforced nowhere).
 */
export async function installAdmissionPolicy(
  kubeConfig: KubeConfig,
  options: {
    /** The label value of the namespaces the binding matches. @default one no namespace carries */
    selects?: string;
    /** Whether the policy is made too (false: its binding alone). @default true */
    policy?: boolean;
    /** A change to the binding as made. */
    binding?: (binding: V1ValidatingAdmissionPolicyBinding) => V1ValidatingAdmissionPolicyBinding;
    /** The user the policy lets write cpsync's profiles (its `identity` variable). @default 'cpsync', as shipped */
    identity?: string;
    /** `identity` names a group, whose members the policy lets write them (as `cpsync hub install --group`). */
    byGroup?: boolean;
  } = {},
): Promise<InstalledPolicy> {
  const api = kubeConfig.makeApiClient(AdmissionregistrationV1Api);
  const shipped = shippedAdmissionPolicy();
  if (options.identity !== undefined) {
    const variable = shipped.policy.spec!.variables!.find((v) => v.name === 'identity')!;
    variable.expression = JSON.stringify(options.identity);
  }
  if (options.byGroup)
    shipped.policy.spec!.variables!.find((v) => v.name === 'byCpsync')!.expression =
      'variables.identity in request.userInfo.groups';
  const narrowed: V1ValidatingAdmissionPolicyBinding = {
    ...shipped.binding,
    spec: {
      ...shipped.binding.spec!,
      matchResources: {
        namespaceSelector: {
          matchLabels: { [POLICY_NAMESPACE_LABEL]: options.selects ?? `nowhere-${process.pid}` },
        },
      },
    },
  };
  const remove = async () => {
    await gone(api.deleteValidatingAdmissionPolicyBinding({ name: shipped.binding.metadata!.name! }));
    await gone(api.deleteValidatingAdmissionPolicy({ name: shipped.policy.metadata!.name! }));
  };
  try {
    const policy =
      options.policy === false
        ? shipped.policy
        : await api.createValidatingAdmissionPolicy({ body: shipped.policy });
    const binding = await api.createValidatingAdmissionPolicyBinding({
      body: options.binding ? options.binding(narrowed) : narrowed,
    });
    return { policy, binding, remove };
  } catch (error) {
    await remove();
    throw error;
  }
}

async function gone(call: Promise<unknown>): Promise<void> {
  try {
    await call;
  } catch (error) {
    if (!(error instanceof ApiException && error.code === 404)) throw error;
  }
}

/**
 * Creates the objects of rbac.yaml named `names` (`Kind/name`) that are not on the hub yet (another test file may
 * have made them); resolves to a function that deletes those it created.
 */
export async function ensureShippedRbac(
  kubeConfig: KubeConfig,
  names: readonly string[],
): Promise<() => Promise<void>> {
  const api = kubeConfig.makeApiClient(KubernetesObjectApi);
  const documents = parseAllDocuments(readFileSync(RBAC_FILE, 'utf8')).map(
    (document) => document.toJS() as KubernetesObject,
  );
  const created: KubernetesObject[] = [];
  const remove = async () => {
    for (const object of created.reverse()) await gone(api.delete(object));
  };
  try {
    for (const name of names) {
      const object = documents.find((d) => `${d.kind}/${d.metadata?.name}` === name);
      if (!object) throw new Error(`rbac.yaml has no ${name}`);
      try {
        await api.create(object);
        created.push(object);
      } catch (error) {
        if (!(error instanceof ApiException && error.code === 409)) throw error;
      }
    }
  } catch (error) {
    await remove();
    throw error;
  }
  return remove;
}

/**
 * Applies a YAML stream of manifests (as a command printed them) the way `kubectl apply --server-side` does: each
 * document as it is, with server-side apply under `fieldManager`. Resolves to a function that deletes them again.
 */
export async function applyPrinted(
  kubeConfig: KubeConfig,
  text: string,
  fieldManager = 'kubectl',
): Promise<() => Promise<void>> {
  const api = kubeConfig.makeApiClient(KubernetesObjectApi);
  const documents = parseAllDocuments(text).map((document) => document.toJS() as KubernetesObject);
  const remove = async () => {
    for (const object of [...documents].reverse()) await gone(api.delete(object));
  };
  try {
    for (const object of documents)
      await api.patch(object, undefined, undefined, fieldManager, true, PatchStrategy.ServerSideApply);
  } catch (error) {
    await remove();
    throw error;
  }
  return remove;
}

/**
 * How a generated setup of a shipped admission policy asks of it, the ways the hub's and the member's share: as
 * shipped, or changed to ask less (its validations gutted, its rules narrowed or naming their objects, a match
 * condition that leaves every request out).
 */
export type PolicyAsked =
  'shipped' | 'validation-gutted' | 'rules-narrowed' | 'rules-named' | 'match-condition';

/**
 * An admission policy's spec with each of its rules naming one object nothing is called: the API server applies it
 * to that name alone, so nothing else is checked.
 */
export function rulesNamed<S extends { matchConstraints?: { resourceRules?: object[] } }>(spec: S): S {
  return {
    ...spec,
    matchConstraints: {
      resourceRules: (spec.matchConstraints?.resourceRules ?? []).map((r) => ({
        ...r,
        resourceNames: ['nothing-is-called-this'],
      })),
    },
  };
}
