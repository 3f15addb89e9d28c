/**
 * Google IAM members that stand for more than one principal: everyone (`allUsers`), every Google account
 * (`allAuthenticatedUsers`), a Workspace or Cloud Identity domain (`domain:`), a Google group (`group:`), a
 * workload identity pool's set of identities (`principalSet://`), and a project's owners, editors or viewers
 * (`projectOwner:`, `projectEditor:`, `projectViewer:`), also as `deleted:` members. A consumer's identity is
 * one principal, so cpsync grants none of these.
 */

/** The forms, as they are spelled in Google's documentation, each with how it reads lower-cased. */
const WHOLE = ['allUsers', 'allAuthenticatedUsers'];
const PREFIXES = [
  'domain:',
  'group:',
  'principalSet://',
  'projectOwner:',
  'projectEditor:',
  'projectViewer:',
];

/**
 * The multi-principal form `identity` is spelled as (`allUsers`, `group:` …), in any case, with any
 * whitespace or invisible format characters around or inside it and in any Unicode compatibility form
 * (`ａｌｌＵｓｅｒｓ`); undefined when it names at most one principal.
 */
export function manyPrincipals(identity: string): string | undefined {
  let spelled = identity
    .normalize('NFKC')
    .replace(/[\s\p{Cf}]/gu, '')
    .toLowerCase();
  while (spelled.startsWith('deleted:')) spelled = spelled.slice('deleted:'.length);
  return (
    WHOLE.find((form) => spelled === form.toLowerCase()) ??
    PREFIXES.find((prefix) => spelled.startsWith(prefix.toLowerCase()))
  );
}
