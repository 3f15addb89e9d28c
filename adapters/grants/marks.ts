/** How cpsync marks the grants it makes (EKS tags, RBAC labels), and knows them again. */
import { firstLineOf } from '../../core/domain/errors.ts';

/** The tag (EKS) and label (RBAC) naming the consumer a grant is for. */
export const GRANT_CONSUMER_KEY = 'cpsync.io/consumer';
/** The tag (EKS) and label (RBAC) naming the cluster manager that made a grant. */
export const GRANT_MANAGER_KEY = 'app.kubernetes.io/managed-by';

/**
 * The source identity cpsync's granting sessions in a member account carry (STS `SourceIdentity`, set when the member
 * role is assumed for the access grants): the member role's grant statements require it, and only the functions that
 * grant may set it, so another function that assumes the role to read (the scope enumerator) cannot grant.
 */
export const GRANT_SOURCE_IDENTITY = 'cpsync-grants';

/** Whether marks (tags, labels) say the grant is `manager`'s, for `consumer`. */
export function isCpsyncGrant(
  marks: Record<string, string> | undefined,
  manager: string,
  consumer: string,
): boolean {
  return marks?.[GRANT_MANAGER_KEY] === manager && marks[GRANT_CONSUMER_KEY] === consumer;
}

/** An error's first line, short (a condition's message). */
export const grantMessage = (error: unknown) => firstLineOf(error, 300);

/** The description that marks a cloud grant (an Azure role assignment, a GKE IAM binding) as `manager`'s, for `consumer`. */
export const grantDescription = (manager: string, consumer: string) =>
  `${manager}: access grant for consumer ${consumer}`;
