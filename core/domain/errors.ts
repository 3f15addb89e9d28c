import { cut } from './text.ts';

/** What went wrong, as one line of text: an error's message, or whatever was thrown. */
export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
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
