import { cut } from './text.ts';

/** Causes followed below an error, at most: enough for fetch's `TypeError` over a socket's error over the system's. */
const CAUSES_FOLLOWED = 4;

/**
 * What went wrong: an error's message, or whatever was thrown, followed by what the transport failures below it add.
 * Node's fetch says only `fetch failed` and keeps why (`connect ECONNREFUSED 10.0.0.7:443`, a TLS failure) in its
 * `cause`; a connection tried on several addresses fails with an AggregateError without a message, its own errors
 * saying why. Only such failures are followed (see `transportFailure`): an answer's error below (a Kubernetes
 * ApiException, a Google or Azure HTTP error) holds the raw response, its headers and ids, and what cpsync's own
 * errors want of it they have said already. A cause whose text the message already holds adds nothing.
 */
export function messageOf(error: unknown): string {
  return textOf(error, new Set());
}

function textOf(error: unknown, seen: Set<unknown>): string {
  if (!(error instanceof Error)) return String(error);
  seen.add(error);
  let text = ownText(error, seen);
  let cause = causeOf(error);
  for (let depth = 0; depth < CAUSES_FOLLOWED && transportFailure(cause) && !seen.has(cause); depth += 1) {
    seen.add(cause);
    const more = ownText(cause as Error, seen);
    if (more !== '' && !text.includes(more)) text = text === '' ? more : `${text}: ${more}`;
    cause = causeOf(cause);
  }
  return text;
}

/**
 * A failure to reach or talk to a server, as Node and undici raise them: an error with a system or transport code
 * (`ECONNREFUSED`, `UND_ERR_CONNECT_TIMEOUT`, `CERT_HAS_EXPIRED`) and no answer of the server's about it, or the
 * AggregateError of several attempts.
 */
function transportFailure(cause: unknown): boolean {
  if (cause instanceof AggregateError) return true;
  if (!(cause instanceof Error)) return false;
  const code = (cause as { code?: unknown }).code;
  return (
    typeof code === 'string' &&
    /^[A-Z][A-Z0-9_]*$/.test(code) &&
    !('response' in cause) &&
    !('body' in cause) &&
    !('headers' in cause)
  );
}

/** undici's connect timeout names the addresses in the order tried, which follows DNS's rotating answers. */
const ATTEMPTED = /\(attempted addresses: ([^()]*?), timeout: (\d+ms)\)/;

/**
 * An error's own text: its message (the same for the same failure: addresses tried in any order read the same),
 * else what its errors say (AggregateError), else its code.
 */
function ownText(error: Error, seen: Set<unknown>): string {
  if (error.message !== '')
    return error.message.replace(
      ATTEMPTED,
      (_all, list: string, timeout: string) =>
        `(attempted addresses: ${list.split(', ').sort().join(', ')}, timeout: ${timeout})`,
    );
  if (error instanceof AggregateError && Array.isArray(error.errors)) {
    // Sorted: addresses tried in another order (DNS answers rotate) are the same failure, and read the same.
    const each = error.errors.filter((e: unknown) => !seen.has(e)).map((e: unknown) => textOf(e, seen));
    const distinct = [...new Set(each.filter((t) => t !== ''))].sort();
    if (distinct.length > 0) return distinct.join('; ');
  }
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' ? code : '';
}

function causeOf(error: unknown): unknown {
  return error instanceof Error ? error.cause : undefined;
}

/**
 * The first non-empty line of what went wrong, at most `max` characters: for one-line reports of SDK
 * errors, whose messages (credential chains above all) explain themselves at length.
 */
export function firstLineOf(error: unknown, max: number): string {
  const text = messageOf(error);
  const line = (text.split('\n').find((l) => l.trim() !== '') ?? text).trim();
  return line.length > max ? `${cut(line, max - 3)}...` : line;
}

/** Base of every error cpsync's core raises; keeps `cause` and names itself. */
export class CpsyncError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** An observed cluster that cannot become a profile; `field` names what was wrong. */
export class InvalidClusterError extends CpsyncError {
  readonly field: string;
  readonly providerId: string;
  constructor(field: string, providerId: string, detail: string, options?: ErrorOptions) {
    super(`cluster ${providerId || '(no provider id)'}: ${field} ${detail}`, options);
    this.field = field;
    this.providerId = providerId;
  }
}

/** Options handed to the core that break its rules (e.g. a manager name that is not a DNS-1123 label). */
export class InvalidOptionError extends CpsyncError {
  readonly option: string;
  /** What is wrong with it, without the option's name. */
  readonly detail: string;
  constructor(option: string, detail: string) {
    super(`${option} ${detail}`);
    this.option = option;
    this.detail = detail;
  }
}

/** An object in the hub that is not a well-formed ClusterProfile; `malformed` says what is wrong. It is left untouched. */
export class MalformedObjectError extends CpsyncError {
  readonly namespace: string;
  readonly objectName: string;
  readonly malformed: string;
  constructor(namespace: string, name: string, malformed: string) {
    super(`${namespace}/${name} in the hub is malformed (${malformed}); left untouched — fix or remove it`);
    this.namespace = namespace;
    this.objectName = name;
    this.malformed = malformed;
  }
}
