/**
 * The file hub (see `FileHub` below): the CLI's local inventory and the offline demo. One file because it is one
 * adapter of the Hub port whose index of labels, writes and reads share one state per namespace.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { dump, load } from 'js-yaml';
import {
  ANNOTATION_PROVIDER_ID,
  LABEL_NAMESPACE_CLUSTERSET,
  LABEL_NAMESPACE_CLUSTERSET_KEP,
  LABEL_PROVIDER,
} from '../../core/domain/constants.ts';
import { isDns1123Label, isDns1123Subdomain, sameProviderId } from '../../core/domain/naming.ts';
import { isProvider } from '../../core/domain/model/observedCluster.ts';
import { MalformedObjectError, messageOf } from '../../core/domain/errors.ts';
import { profileProblem } from '../../core/domain/model/validate.ts';
import { matchesSelector } from '../../core/domain/labels.ts';
import { sameJson } from '../../core/domain/json.ts';
import { mergeObjectApply, statusApplyBody } from '../../core/domain/ownership.ts';
import {
  CLUSTER_PROFILE_API_VERSION,
  CLUSTER_PROFILE_KIND,
  type ClusterProfile,
  type ProfileRef,
} from '../../core/domain/model/clusterProfile.ts';
import type { Hub, MalformedObject, NamespaceSpec, ProfileLabels } from '../../core/sync/ports.ts';
import { removeAbandonedTemporaryFiles, replaceFile } from '../shared/files.ts';
import {
  HubConflictError,
  HubError,
  HubForbiddenError,
  HubRejectedError,
  HubUnavailableError,
} from './errors.ts';

/**
 * A file system failure as the hub error the Kubernetes hub would raise for the same trouble, so that
 * callers tell them apart the same way whatever the hub: refused access, or a hub that cannot answer now.
 */
function fileError(operation: string, target: string, error: unknown): HubError {
  if (error instanceof HubError) return error;
  const code = (error as NodeJS.ErrnoException).code;
  const detail = messageOf(error);
  if (code === 'EACCES' || code === 'EPERM' || code === 'EROFS')
    return new HubForbiddenError(operation, target, detail, undefined, { cause: error });
  return new HubUnavailableError(operation, target, detail, undefined, { cause: error });
}

export interface FileHubOptions {
  /** The directory that holds the inventory: `<directory>/<namespace>/<name>.yaml`. */
  directory: string;
}

const NAMESPACE_FILE = '_namespace.yaml';

/**
 * js-yaml (YAML 1.2 core schema) rather than the `yaml` package used for configuration files: a
 * 10,000-profile inventory is read and written several times faster (about 0.13 ms against 1 ms a
 * profile to read), and the files need no comments or error positions.
 */
function toYaml(value: unknown): string {
  return dump(value, { lineWidth: -1, noRefs: true });
}

/** Whether `path` is there to be seen (any error looking counts as not). */
function exists(path: string): boolean {
  try {
    statSync(path);
    return true;
  } catch {
    return false;
  }
}

/**
 * A profile's file: indented JSON, which is YAML 1.2 (any YAML reader and `kubectl apply -f` take it), written
 * and read back about ten times faster than block YAML (the profile's certificate data is most of its text).
 */
function profileText(profile: ClusterProfile): string {
  return `${JSON.stringify(profile, null, 2)}\n`;
}

/** A file's document: JSON.parse for what the hub wrote, js-yaml for YAML written by hand (or by older versions). */
function parseDocument(text: string): unknown {
  if (text.trimStart().startsWith('{')) {
    try {
      return JSON.parse(text);
    } catch {
      // Not JSON after all (flow-style YAML, or a broken file): js-yaml reads it or says where it is wrong.
    }
  }
  return load(text);
}

/** A profile as the index keeps it: its labels (the profile itself is read from its file when asked for). */
interface Stored {
  labels: Readonly<Record<string, string>>;
}

/** A namespace's profiles as last read or written, and the directory's mtime that matches them. */
interface NamespaceIndex {
  profiles: Map<string, Stored>;
  /** The names of the profiles that carry each label (`key=value`), so a list by selector reads only those. */
  byLabel: Map<string, Set<string>>;
  mtimeMs: number;
}

const NONE: ReadonlySet<string> = new Set();

function labelPairs(labels: Readonly<Record<string, string>>): string[] {
  return Object.entries(labels).map(([key, value]) => `${key}=${value}`);
}

/** Takes a profile out of an index. */
function forget(index: NamespaceIndex, name: string): void {
  const old = index.profiles.get(name);
  if (!old) return;
  for (const pair of labelPairs(old.labels)) {
    const names = index.byLabel.get(pair);
    names?.delete(name);
    if (names?.size === 0) index.byLabel.delete(pair);
  }
  index.profiles.delete(name);
}

/** Puts a profile's labels into an index, in place of what it held under that name. */
function remember(index: NamespaceIndex, name: string, profile: ClusterProfile): void {
  forget(index, name);
  const labels = { ...profile.metadata.labels };
  index.profiles.set(name, { labels });
  for (const pair of labelPairs(labels)) {
    const names = index.byLabel.get(pair);
    if (names) names.add(name);
    else index.byLabel.set(pair, new Set([name]));
  }
}

/**
 * The hub as a directory of YAML files (written as JSON, which is YAML), one per profile, for local runs without a cluster. It keeps
 * the same rules as the Kubernetes hub where they matter to a sync: a resourceVersion that moves on
 * every write, delete preconditions, labels merged on apply, status written apart from the object (or with it,
 * in one write, by `applyWhole`).
 *
 * Each namespace's files are read once into an index of their labels, which the hub keeps up to date
 * with its own writes; a list reads only the files whose labels match, so memory does not grow with the
 * inventory's profiles. The index is read again whenever the directory changed otherwise (its mtime
 * moved), so files added or removed by hand or by another process are seen by the next list.
 */
export class FileHub implements Hub {
  readonly #directory: string;
  readonly #indexes = new Map<string, NamespaceIndex>();
  readonly #loading = new Map<string, Promise<NamespaceIndex>>();
  /** The hub's own changes in flight, by namespace. */
  readonly #busy = new Map<string, number>();
  /** Files that are not well-formed profiles (`namespace/name` → what is wrong): left untouched. */
  readonly #malformed = new Map<string, MalformedObject>();

  constructor(options: FileHubOptions) {
    this.#directory = options.directory;
  }

  #path(namespace: string, name?: string): string {
    if (!isDns1123Label(namespace))
      throw new HubRejectedError('resolve', namespace, 'is not a valid namespace name', 422);
    if (name === undefined) return join(this.#directory, namespace);
    if (!isDns1123Subdomain(name))
      throw new HubRejectedError('resolve', `${namespace}/${name}`, 'is not a valid object name', 422);
    return join(this.#directory, namespace, `${name}.yaml`);
  }

  /**
   * The profile in a file, or undefined when there is none. A file that is not a well-formed profile
   * of that name and namespace (edited by hand, cut short) is recorded as malformed and reported with
   * MalformedObjectError; it is never written over or deleted.
   */
  async #read(ref: ProfileRef): Promise<ClusterProfile | undefined> {
    const key = `${ref.namespace}/${ref.name}`;
    let text: string;
    try {
      // Synchronous: a profile file is a few kilobytes from the page cache, and a namespace's first list reads thousands.
      text = readFileSync(this.#path(ref.namespace, ref.name), 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
        this.#malformed.delete(key);
        return undefined;
      }
      throw fileError('read', key, error);
    }
    let document: unknown;
    let problem: string | undefined;
    try {
      document = parseDocument(text);
      problem = profileProblem(document);
    } catch (error) {
      const line = (error as { mark?: { line?: number } }).mark?.line;
      problem = `not valid YAML${line === undefined ? '' : ` (line ${line + 1})`}`;
    }
    const metadata = (document as ClusterProfile | undefined)?.metadata;
    if (!problem && (metadata?.name !== ref.name || metadata.namespace !== ref.namespace))
      problem = `its metadata names ${metadata?.namespace}/${metadata?.name}, not the file's ${key}`;
    if (problem) {
      this.#malformed.set(key, { namespace: ref.namespace, name: ref.name, reason: problem });
      throw new MalformedObjectError(ref.namespace, ref.name, problem);
    }
    this.#malformed.delete(key);
    return document as ClusterProfile;
  }

  /** Refuses to change an object that is malformed: a person edited it, and what they meant is theirs to fix. */
  #untouchable(ref: ProfileRef): void {
    const known = this.#malformed.get(`${ref.namespace}/${ref.name}`);
    if (known) throw new MalformedObjectError(ref.namespace, ref.name, known.reason);
  }

  malformed(): MalformedObject[] {
    return [...this.#malformed.values()];
  }

  async #write(profile: ClusterProfile): Promise<ClusterProfile> {
    const { namespace, name } = profile.metadata;
    const path = this.#path(namespace, name);
    try {
      await this.#changing(namespace, async (index) => {
        // A namespace with an index has its directory already.
        if (!index) await mkdir(this.#path(namespace), { recursive: true });
        const text = profileText(profile);
        await replaceFile(path, text);
        // A namespace that had no directory when this write began may have been read meanwhile (another
        // change's read of it, under way or done, may have missed this file): the profile goes into that index.
        const known = index ?? (await this.#loading.get(namespace)) ?? this.#indexes.get(namespace);
        if (known) remember(known, name, profile);
      });
    } catch (error) {
      throw fileError('write', `${namespace}/${name}`, error);
    }
    return profile;
  }

  /**
   * Runs one of the hub's own changes to a namespace's directory, keeping its index in step. The
   * directory's mtime is recorded once the last change in flight is done, so that only changes made
   * by others make the next list read the files again.
   */
  async #changing(
    namespace: string,
    change: (index: NamespaceIndex | undefined) => Promise<void>,
  ): Promise<void> {
    // Taken before the change begins: a read of the files never overlaps the hub's own changes.
    const index = await this.#index(namespace);
    this.#busy.set(namespace, (this.#busy.get(namespace) ?? 0) + 1);
    try {
      await change(index);
    } finally {
      // Read while still counted as busy, so no list in between takes the hub's own change for another's.
      // Synchronous, as every stat of the directory here: a stat is microseconds, its thread-pool round trip more.
      const mtimeMs = statSync(this.#path(namespace), { throwIfNoEntry: false })?.mtimeMs;
      const left = this.#busy.get(namespace)! - 1;
      this.#busy.set(namespace, left);
      if (left === 0 && index && mtimeMs !== undefined) index.mtimeMs = mtimeMs;
    }
  }

  /**
   * The namespace's index; read from the files the first time, and again whenever the directory
   * changed behind the hub's back. Lists arriving together share one read.
   */
  async #index(namespace: string): Promise<NamespaceIndex | undefined> {
    // A read of the files under way is what every caller waits for: no change overlaps it.
    const loading = this.#loading.get(namespace);
    if (loading) return loading;
    const known = this.#indexes.get(namespace);
    // While the hub's own changes are in flight the directory's mtime says nothing about others'.
    const busy = () => (this.#busy.get(namespace) ?? 0) > 0;
    if (known && busy()) return known;
    let mtimeMs: number;
    try {
      mtimeMs = statSync(this.#path(namespace)).mtimeMs;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw fileError('list profiles in', namespace, error);
    }
    // Checked again after the wait: a change may have begun, or a read, in the meantime.
    if (known && (known.mtimeMs === mtimeMs || busy())) return known;
    const started = this.#loading.get(namespace);
    if (started) return started;
    const load = this.#load(namespace, mtimeMs).finally(() => this.#loading.delete(namespace));
    this.#loading.set(namespace, load);
    return load;
  }

  /** What the hub holds for `ref`, from the namespace's index (kept fresh as for lists). */
  async #current(ref: ProfileRef): Promise<ClusterProfile | undefined> {
    this.#path(ref.namespace, ref.name); // refuses names that could leave the directory
    const stored = (await this.#index(ref.namespace))?.profiles.has(ref.name);
    return stored ? this.#read(ref) : undefined;
  }

  async #load(namespace: string, mtimeMs: number): Promise<NamespaceIndex> {
    const index: NamespaceIndex = { profiles: new Map(), byLabel: new Map(), mtimeMs };
    if (!this.#indexes.has(namespace)) await removeAbandonedTemporaryFiles(this.#path(namespace));
    const entries = await readdir(this.#path(namespace));
    for (const key of [...this.#malformed.keys()])
      if (key.startsWith(`${namespace}/`)) this.#malformed.delete(key);
    // `_namespace.yaml` and `_configmap.<name>.yaml` are the namespace's own files (no profile name starts with _).
    for (const entry of entries.filter((e) => e.endsWith('.yaml') && !e.startsWith('_'))) {
      const name = entry.slice(0, -'.yaml'.length);
      if (!isDns1123Subdomain(name)) {
        this.#malformed.set(`${namespace}/${name}`, {
          namespace,
          name,
          reason: 'the file name is not a valid object name',
        });
        continue;
      }
      try {
        const read = await this.#read({ namespace, name });
        if (read) remember(index, name, read);
      } catch (error) {
        // Recorded by #read; the rest of the namespace is read as usual.
        if (!(error instanceof MalformedObjectError)) throw error;
      }
    }
    this.#indexes.set(namespace, index);
    return index;
  }

  #nextVersion(current: ClusterProfile | undefined): string {
    return String(Number(current?.metadata.resourceVersion ?? '0') + 1);
  }

  async ensureNamespace(namespace: NamespaceSpec): Promise<void> {
    const directory = this.#path(namespace.name);
    await mkdir(directory, { recursive: true });
    const labels = namespace.clusterSet
      ? {
          [LABEL_NAMESPACE_CLUSTERSET]: namespace.clusterSet,
          [LABEL_NAMESPACE_CLUSTERSET_KEP]: namespace.clusterSet,
        }
      : {};
    const body = toYaml({
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: namespace.name, labels },
    });
    const path = join(directory, NAMESPACE_FILE);
    const existing = await readFile(path, 'utf8').catch(() => undefined);
    if (existing === body) return;
    await writeFile(path, body, 'utf8');
  }

  /** Only cpsync writes the file hub's namespaces: any ClusterSet label on one is cpsync's. */
  async dropClusterSet(name: string): Promise<void> {
    // Never made for this: only a namespace there is written (without the labels) where it carries them.
    if (statSync(join(this.#path(name), NAMESPACE_FILE), { throwIfNoEntry: false }))
      await this.ensureNamespace({ name });
  }

  async get(ref: ProfileRef): Promise<ClusterProfile | undefined> {
    return this.#read(ref);
  }

  /** A ConfigMap is `<namespace>/_configmap.<name>.yaml`, written whole (one process applies a namespace at a time). */
  async updateConfigMap(
    ref: ProfileRef,
    change: (data: Readonly<Record<string, string>>) => Record<string, string>,
  ): Promise<void> {
    const directory = this.#path(ref.namespace);
    if (!isDns1123Subdomain(ref.name))
      throw new HubRejectedError(
        'resolve',
        `${ref.namespace}/${ref.name}`,
        'is not a valid object name',
        422,
      );
    const path = join(directory, `_configmap.${ref.name}.yaml`);
    let text: string | undefined;
    try {
      // Synchronous, as the hub's other small reads: every scope of a run records its feature states here.
      text = readFileSync(path, 'utf8');
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' && !exists(directory)) return;
      if (code !== 'ENOENT') throw fileError('read', `${ref.namespace}/${ref.name}`, error);
    }
    const stored = text === undefined ? undefined : (load(text) as { data?: Record<string, string> } | null);
    const data = stored?.data ?? {};
    const next = change(data);
    if (text !== undefined && sameJson(data, next)) return;
    await replaceFile(
      path,
      toYaml({
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: ref.name, namespace: ref.namespace },
        data: next,
      }),
    );
  }

  async list(namespace: string, selector: Record<string, string>): Promise<ClusterProfile[]> {
    const index = await this.#index(namespace);
    if (!index) return [];
    // The profiles that carry the rarest of the selector's labels, then checked against all of them.
    const carrying = Object.entries(selector).map(
      ([key, value]) => index.byLabel.get(`${key}=${value}`) ?? NONE,
    );
    const candidates: Iterable<string> =
      carrying.length === 0
        ? index.profiles.keys()
        : carrying.reduce((fewest, names) => (names.size < fewest.size ? names : fewest));
    const names = [...candidates]
      .filter((name) => matchesSelector(index.profiles.get(name)!.labels, selector))
      .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    // Each profile read from its file: the index holds labels only, so a hub of 30,000 profiles is not held in memory.
    const profiles: ClusterProfile[] = [];
    for (const name of names) {
      let profile: ClusterProfile | undefined;
      try {
        profile = await this.#read({ namespace, name });
      } catch (error) {
        // A file someone broke since the index was read: recorded by #read, left out like any malformed file.
        if (!(error instanceof MalformedObjectError)) throw error;
      }
      if (profile && matchesSelector(profile.metadata.labels, selector)) profiles.push(profile);
    }
    return profiles;
  }

  /** As `list`, from the index alone: no file is read unless the directory changed behind the hub's back. */
  async listLabels(namespace: string, selector: Record<string, string>): Promise<ProfileLabels[]> {
    const index = await this.#index(namespace);
    if (!index) return [];
    return [...index.profiles]
      .filter(([, stored]) => matchesSelector(stored.labels, selector))
      .map(([name, stored]) => ({ name, labels: { ...stored.labels } }))
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  applyObject(profile: ClusterProfile): Promise<ClusterProfile> {
    return this.#apply(profile, false);
  }

  /**
   * The object and its status in one file write: a profile the engine creates (or changes in both) is written
   * once, not twice with a read between, which is most of what a full sync spends in this hub.
   */
  applyWhole(profile: ClusterProfile): Promise<ClusterProfile> {
    return this.#apply(profile, true);
  }

  async #apply(profile: ClusterProfile, withStatus: boolean): Promise<ClusterProfile> {
    const current = await this.#current(profile.metadata);
    this.#untouchable(profile.metadata);
    if (current && current.spec.clusterManager.name !== profile.spec.clusterManager.name) {
      throw new HubRejectedError(
        'apply',
        `${profile.metadata.namespace}/${profile.metadata.name}`,
        'spec.clusterManager: ClusterManager is immutable',
        422,
      );
    }
    // As the hub's admission policy has it: a profile's cluster never changes (two runs that gave two
    // clusters the same new name at once cannot write one over the other).
    const storedId = current?.metadata.annotations?.[ANNOTATION_PROVIDER_ID];
    const appliedId = profile.metadata.annotations?.[ANNOTATION_PROVIDER_ID];
    const provider = profile.metadata.labels?.[LABEL_PROVIDER];
    if (
      storedId !== undefined &&
      appliedId !== undefined &&
      (isProvider(provider) ? !sameProviderId(provider, storedId, appliedId) : storedId !== appliedId)
    ) {
      throw new HubRejectedError(
        'apply',
        `${profile.metadata.namespace}/${profile.metadata.name}`,
        `metadata.annotations[${ANNOTATION_PROVIDER_ID}]: is the profile of ${storedId}, and a profile's cluster never changes`,
        422,
      );
    }
    const { labels, annotations, ...rest } = mergeObjectApply(current, profile);
    return this.#write({
      apiVersion: CLUSTER_PROFILE_API_VERSION,
      kind: CLUSTER_PROFILE_KIND,
      metadata: {
        name: profile.metadata.name,
        namespace: profile.metadata.namespace,
        labels,
        annotations,
        resourceVersion: this.#nextVersion(current),
        uid: current?.metadata.uid ?? randomUUID(),
        generation: (current?.metadata.generation ?? 0) + 1,
      },
      ...rest,
      ...(withStatus ? { status: statusApplyBody(profile).status } : {}),
    });
  }

  async applyStatus(profile: ClusterProfile): Promise<ClusterProfile> {
    const current = await this.#current(profile.metadata);
    this.#untouchable(profile.metadata);
    if (!current) {
      throw new HubError(
        'apply status of',
        `${profile.metadata.namespace}/${profile.metadata.name}`,
        'not found',
        404,
      );
    }
    return this.#write({
      ...current,
      metadata: { ...current.metadata, resourceVersion: this.#nextVersion(current) },
      status: statusApplyBody(profile).status,
    });
  }

  async delete(ref: ProfileRef & { resourceVersion?: string }): Promise<void> {
    const current = await this.#current(ref);
    this.#untouchable(ref);
    if (!current) return;
    if (ref.resourceVersion && current.metadata.resourceVersion !== ref.resourceVersion) {
      throw new HubConflictError(
        'delete',
        `${ref.namespace}/${ref.name}`,
        `resourceVersion is ${current.metadata.resourceVersion}, not ${ref.resourceVersion}`,
        409,
      );
    }
    await this.#changing(ref.namespace, async (index) => {
      if (index) forget(index, ref.name);
      await rm(this.#path(ref.namespace, ref.name), { force: true });
    });
  }
}
