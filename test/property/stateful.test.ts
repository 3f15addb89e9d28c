/**
 * The net under both promises: a stateful, model-based property test (fast-check commands) that drives
 * the real `cpsync` CLI against the local estate with random sequences of cloud changes (create,
 * delete, upgrade, a zonal cluster moved to another zone of its region, a twin: a cluster named as a live
 * one in another region, zone or resource group — the command is built with names weak enough that twins
 * want the same profile name), syncs over random
 * `--provider`/`--scope` selections (every shape the CLI accepts, covered or not), runs killed at random
 * points (SIGKILL, SIGTERM, SIGINT), two runs at once, unreadable outbox files, hand-made junk in the
 * hub, a closed stdout (the bus gone), cloud outages, and clusters the clouds are still changing (being
 * created, updated or deleted) until they settle, followed by `sync --follow`.
 *
 * After every step it checks, with an oracle that reads the clouds, the hub's files and the delivered
 * lines itself (not cpsync's plan):
 *   I1 no profile of a live cluster is ever deleted (nor re-created under a new uid);
 *   I2 one change, one event id: deliveries that share an id are the same change, and a creation is
 *      announced under one id only;
 *   I3 at every quiet point (a full sync that finished with nothing pending) every change that reached
 *      the hub was announced: each profile's creation, its latest version, each deletion;
 *   I4 after two clean full syncs the hub equals the clouds.
 * Seeded and bounded in time; a failure prints the seed, the path and the sequence of steps.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { DeleteClusterCommand, EKSClient } from '@aws-sdk/client-eks';
import fc from 'fast-check';
import { parse, stringify } from 'yaml';
import {
  aksCluster,
  AZURE_SUBSCRIPTION,
  EKS_ACCOUNT,
  GCP_PROJECT,
  gkeCluster,
  startEmulators,
  type Emulators,
} from '../env/emulators.ts';
import { accountCredentials, createEksClusters } from '../support/aws.ts';
import {
  cliWithNames,
  hasStackTrace,
  jsonLines,
  runCli,
  type CliOptions,
  type CliRun,
} from '../support/cli.ts';
import {
  cloudKey,
  liveClusters,
  readInventory,
  type DeliveredEvent,
  type StoredProfile,
} from '../support/oracle.ts';
import { temporaryDirectory } from '../support/tmp.ts';
import { armCase, type ManagedClusterJson } from '../env/fakes/armServer.ts';
import type { GkeClusterJson } from '../env/fakes/gkeServer.ts';
import { holdTransition, type Transition } from '../env/transitions.ts';

const SEED = Number(process.env.CPSYNC_PROPERTY_SEED ?? 20261123);
/** Wall time after which no new sequence is started (the test command's budget is two minutes). */
const TIME_LIMIT_MILLIS = Number(process.env.CPSYNC_PROPERTY_MILLIS ?? 85_000);
const EKS_REGIONS = ['us-east-1', 'eu-west-1'] as const;

/** The clouds as the test changes them: what it created and what still stands. */
interface Model {
  live: Array<{
    provider: 'eks' | 'gke' | 'aks';
    name: string;
    location: string;
    /** The cloud is still changing it: a DELETING cluster still exists, and its profile must stay. */
    inChange?: Transition;
    /** AKS: its resource group, when not `rg-<name>` (`aks-<name>` when the test made it; a twin: another group, or the same in letters ARM tells apart). */
    group?: string;
  }>;
  next: number;
}

type Violation = string;

/** One sequence's estate, inventory and oracle. */
class Real {
  readonly directory: string;
  readonly config: string;
  readonly delivered: DeliveredEvent[] = [];
  /** The uid each live cluster's profile was first seen with. */
  readonly uidOf = new Map<string, string>();
  /** Every profile incarnation ever seen in the hub. */
  readonly seen = new Map<string, StoredProfile>();
  hub = new Map<string, StoredProfile>();
  readonly junk = new Map<string, string>();
  /** Cloud outages that end once the next sync is over. */
  readonly outages: Array<() => void> = [];
  /** How each cluster in change settles, by `provider/name`. */
  readonly holds = new Map<string, () => void>();
  runs = 0;
  /** Name collisions the runs reported (twins wanting one name). */
  collisions = 0;

  readonly emulators: Emulators;
  /** The `cpsync` command under test: built with names weak enough to collide (see CreateTwin). */
  readonly command: string;

  constructor(emulators: Emulators, base: Record<string, unknown>, id: number, command: string) {
    this.emulators = emulators;
    this.command = command;
    this.directory = join(emulators.directory, `sequence-${id}`);
    mkdirSync(this.directory, { recursive: true });
    const document = structuredClone(base) as Record<string, unknown>;
    delete document.bus;
    document.hub = { directory: join(this.directory, 'inventory') };
    document.outbox = { directory: join(this.directory, 'outbox') };
    // The least forgiving grace: one complete listing without a cluster deletes its profile.
    document.inventory = { namespace: 'stateful', tagAllowList: ['team'], deletionGraceListings: 1 };
    document.sync = { leaseWaitSeconds: 60 };
    // `sync --follow` looks again every second.
    document.follow = {
      firstDelaySeconds: 1,
      maxDelaySeconds: 1,
      maxMinutes: 1,
      eks: { minDelaySeconds: 1, maxDelaySeconds: 1 },
    };
    this.config = join(this.directory, 'cpsync.yaml');
    writeFileSync(this.config, stringify(document));
  }

  /** Runs the CLI; its stdout lines are what the bus delivered. */
  async cli(args: string[], options: CliOptions = {}): Promise<CliRun> {
    this.runs += 1;
    const run = await runCli([...args, '--config', this.config], {
      cwd: this.directory,
      env: this.emulators.env,
      command: this.command,
      ...options,
    });
    this.delivered.push(...jsonLines<DeliveredEvent>(run.stdout));
    this.collisions += run.stderr.match(/name collision/g)?.length ?? 0;
    assert.ok(!hasStackTrace(run.stderr), `a stack trace:\n${run.stderr}`);
    // I5: what a cloud said is shown, never acted on: no control, bidi or zero-width character reaches the
    // terminal (JSON event lines escape controls; bidi characters in them are data, not display).
    if (process.env.CPSYNC_PROPERTY_VERBOSE) console.log(`$ cpsync ${args.join(' ')}\n${run.stderr}`);
    const found = ACTING.exec(run.stderr);
    assert.equal(found, null, `I5: stderr of ${args[0]} carries ${JSON.stringify(found?.[0])}`);
    for (const line of run.stdout.split('\n')) {
      const acting = line.startsWith('{') ? CONTROL.exec(line) : ACTING.exec(line);
      assert.equal(acting, null, `I5: stdout of ${args[0]} carries ${JSON.stringify(acting?.[0])}`);
    }
    return run;
  }

  live() {
    return liveClusters(this.emulators, { account: EKS_ACCOUNT, regions: EKS_REGIONS });
  }

  /** After a change in the clouds: a cluster that is gone may come back later as a new cluster (same id). */
  async afterCloudChange(): Promise<void> {
    const live = await this.live();
    for (const id of [...this.uidOf.keys()]) if (!live.has(id)) this.uidOf.delete(id);
  }

  /** After a step that ran cpsync: I1 and I2. */
  async afterSync(runs: CliRun[]): Promise<void> {
    for (const heal of this.outages.splice(0)) heal();
    const live = await this.live();
    const before = this.hub;
    const after = readInventory(join(this.directory, 'inventory'));
    const violations: Violation[] = [];
    const stepEvents = runs.flatMap((run) => jsonLines<DeliveredEvent>(run.stdout));
    for (const [key, profile] of before) {
      if (!live.has(cloudKey(profile.providerId))) continue;
      const now = after.get(key);
      if (!now) violations.push(`I1: the profile ${key} of live cluster ${profile.providerId} was deleted`);
      else if (now.uid !== profile.uid)
        violations.push(
          `I1: the profile ${key} of live cluster ${profile.providerId} was re-created (uid ${profile.uid} → ${now.uid})`,
        );
    }
    // A Deleted event is of a live cluster's profile when it names that cluster and its uid is one its
    // profiles have had (or no uid at all). The deletion of an earlier incarnation (a cluster that moved
    // away and came back under the same id), announced late, is not.
    const uidsOf = (id: string) =>
      new Set(
        [...before.values(), ...after.values()]
          .filter((p) => cloudKey(p.providerId) === id)
          .map((p) => p.uid)
          .concat(this.uidOf.get(id) ?? []),
      );
    for (const event of stepEvents) {
      const id = cloudKey(String(event.detail.cluster?.providerId));
      if (
        event['detail-type'] === 'ClusterProfile Deleted' &&
        live.has(id) &&
        (!event.detail.uid || uidsOf(id).has(event.detail.uid))
      )
        violations.push(
          `I1: Deleted announced for ${event.detail.name} of live cluster ${event.detail.cluster?.providerId}`,
        );
    }
    for (const profile of after.values()) {
      const id = cloudKey(profile.providerId);
      if (!live.has(id)) continue;
      if (profile.joined === 'False')
        violations.push(
          `I1: the profile of live cluster ${profile.providerId} is marked missing from its listings`,
        );
      const first = this.uidOf.get(id);
      if (first && first !== profile.uid)
        violations.push(
          `I1: live cluster ${profile.providerId} got a new profile (uid ${first} → ${profile.uid})`,
        );
      this.uidOf.set(id, profile.uid);
    }
    for (const [key, profile] of after) this.seen.set(`${key}#${profile.uid}`, profile);
    this.hub = after;
    violations.push(...this.oneIdPerChange());
    for (const [file, text] of this.junk)
      if (!existsSync(file) || readFileSync(file, 'utf8') !== text)
        violations.push(`hub junk ${file} was touched`);
    assert.deepEqual(violations, []);
  }

  /** I2: ids are functions of changes. */
  oneIdPerChange(): Violation[] {
    const violations: Violation[] = [];
    const byId = new Map<string, string>();
    const createdIds = new Map<string, Set<string>>();
    for (const event of this.delivered) {
      if (event['detail-type'] === 'Inventory Scope Synced') continue;
      const d = event.detail;
      const content = JSON.stringify([event['detail-type'], d.namespace, d.name, d.changedFields]);
      const known = byId.get(d.eventId);
      if (known && known !== content)
        violations.push(`I2: event id ${d.eventId} names two changes: ${known} / ${content}`);
      byId.set(d.eventId, content);
      if (event['detail-type'] === 'ClusterProfile Created') {
        const key = `${d.namespace}/${d.name}#${d.uid}`;
        createdIds.set(key, (createdIds.get(key) ?? new Set()).add(d.eventId));
      }
    }
    for (const [key, ids] of createdIds)
      if (ids.size > 1) violations.push(`I2: the creation of ${key} was announced under ${ids.size} ids`);
    return violations;
  }

  /** I3: at a quiet point, every change that reached the hub was announced. */
  quiet(): void {
    const violations: Violation[] = [];
    const changes = this.delivered.filter((e) => e['detail-type'] !== 'Inventory Scope Synced');
    for (const [key, profile] of this.hub) {
      const mine = changes.filter(
        (e) => `${e.detail.namespace}/${e.detail.name}` === key && e.detail.uid === profile.uid,
      );
      if (!mine.some((e) => e['detail-type'] === 'ClusterProfile Created'))
        violations.push(`I3: the creation of ${key} (uid ${profile.uid}) was never announced`);
      const latest = Math.max(...mine.map((e) => Number(e.detail.resourceVersion ?? 0)));
      if (latest !== Number(profile.resourceVersion))
        violations.push(
          `I3: ${key} is at version ${profile.resourceVersion} but the last announced is ${latest}`,
        );
    }
    for (const [incarnation, profile] of this.seen) {
      const key = `${profile.namespace}/${profile.name}`;
      if (this.hub.get(key)?.uid === profile.uid) continue;
      const created = changes.findIndex(
        (e) => e['detail-type'] === 'ClusterProfile Created' && e.detail.uid === profile.uid,
      );
      const deleted = changes.findLastIndex(
        (e) =>
          e['detail-type'] === 'ClusterProfile Deleted' && `${e.detail.namespace}/${e.detail.name}` === key,
      );
      if (deleted < created || deleted === -1)
        violations.push(`I3: the deletion of ${incarnation} was never announced`);
    }
    const outbox = join(this.directory, 'outbox');
    const waiting = [outbox, join(outbox, 'intents')]
      .filter(existsSync)
      .flatMap((d) => readdirSync(d).filter((f) => f.endsWith('.json')));
    if (waiting.length > 0) violations.push(`I3: records still wait in the outbox: ${waiting.join(', ')}`);
    assert.deepEqual(violations, []);
  }

  /** I4: after two clean full syncs the hub equals the clouds. */
  async converged(): Promise<void> {
    for (let i = 0; i < 2; i++) {
      const run = await this.cli(['sync']);
      await this.afterSync([run]);
      assert.match(run.stderr, / 0 pending/, run.stderr);
    }
    this.quiet();
    const live = await this.live();
    const held = new Map([...this.hub.values()].map((p) => [cloudKey(p.providerId), p]));
    assert.deepEqual(
      [...held.keys()].sort(),
      [...live.keys()].sort(),
      'I4: the hub holds exactly the live clusters',
    );
    for (const [id, cluster] of live) {
      const profile = held.get(id)!;
      assert.equal(profile.displayName, cluster.name, `I4: ${id} display name`);
      assert.ok(
        profile.version?.startsWith(cluster.version),
        `I4: ${id} is ${profile.version}, the cloud says ${cluster.version}`,
      );
      assert.equal(profile.joined, 'True', `I4: ${id} joined`);
    }
  }
}

type Command = fc.AsyncCommand<Model, Real>;

const GKE_LOCATIONS = ['europe-west1', 'europe-west1-b', 'europe-west1-c', 'us-central1-a'] as const;
const AKS_LOCATIONS = ['westeurope', 'eastus'] as const;
const EKS_LOCATIONS = [...EKS_REGIONS, 'ap-south-1'] as const;

class CreateCluster implements Command {
  readonly provider: 'eks' | 'gke' | 'aks';
  readonly pick: number;
  constructor(provider: 'eks' | 'gke' | 'aks', pick: number) {
    this.provider = provider;
    this.pick = pick;
  }
  check = () => true;
  async run(model: Model, real: Real) {
    // Names as odd as each cloud allows: case, underscores, runs of dashes, the longest (EKS 100, AKS 63, GKE 40).
    const n = model.next++;
    const odd = {
      eks: [
        `C${n}-PAYMENTS`,
        `c${n}_payments_`,
        `c${n}-_-__-`,
        `c${n}${'x'.repeat(100 - String(n).length - 1)}`,
      ],
      aks: [`C${n}_Web`, `c${n}-_-x`, `c${n}${'y'.repeat(63 - String(n).length - 1)}`],
      gke: [`c${n}-z`, `c${n}${'z'.repeat(40 - String(n).length - 1)}`],
    }[this.provider];
    const name = this.pick % 3 === 0 ? odd[this.pick % odd.length]! : `c${n}`;
    const locations = { eks: EKS_LOCATIONS, gke: GKE_LOCATIONS, aks: AKS_LOCATIONS }[this.provider];
    const location = locations[this.pick % locations.length]!;
    // An AKS cluster's resource group has letters (`k`, `s`) a twin can mimic in letters ARM tells apart.
    const group = this.provider === 'aks' ? `aks-${name}` : undefined;
    await createCluster(real.emulators, this.provider, name, location, group);
    model.live.push({ provider: this.provider, name, location, ...(group ? { group } : {}) });
  }
  toString = () => `create ${this.provider} #${this.pick}`;
}

async function createCluster(
  emulators: Emulators,
  provider: string,
  name: string,
  location: string,
  group = `rg-${name}`,
) {
  if (provider === 'eks') await createEksClusters(emulators.moto.endpoint, EKS_ACCOUNT, location, [{ name }]);
  else if (provider === 'gke')
    emulators.gke.clusters.set(GCP_PROJECT, [
      ...(emulators.gke.clusters.get(GCP_PROJECT) ?? []),
      gkeCluster(name, location),
    ]);
  else
    emulators.arm.clusters.set(AZURE_SUBSCRIPTION, [
      ...(emulators.arm.clusters.get(AZURE_SUBSCRIPTION) ?? []),
      { ...aksCluster(name, group), location },
    ]);
}

async function deleteCluster(emulators: Emulators, cluster: Model['live'][number]) {
  if (cluster.provider === 'eks') {
    const eks = new EKSClient({
      endpoint: emulators.moto.endpoint,
      region: cluster.location,
      credentials: await accountCredentials(emulators.moto.endpoint, EKS_ACCOUNT),
    });
    await eks.send(new DeleteClusterCommand({ name: cluster.name }));
    eks.destroy();
  } else if (cluster.provider === 'gke')
    emulators.gke.clusters.set(
      GCP_PROJECT,
      (emulators.gke.clusters.get(GCP_PROJECT) ?? []).filter(
        (c) => !(c.name === cluster.name && c.location === cluster.location),
      ),
    );
  else {
    const id = aksCluster(cluster.name, cluster.group ?? `rg-${cluster.name}`).id;
    emulators.arm.clusters.set(
      AZURE_SUBSCRIPTION,
      (emulators.arm.clusters.get(AZURE_SUBSCRIPTION) ?? []).filter((c) => c.id !== id),
    );
  }
}

/** Whether another live cluster of the same cloud has `cluster`'s name (a twin): the steps that find a cluster by name leave both alone. */
const twinned = (model: Readonly<Model>, cluster: Model['live'][number]) =>
  model.live.some((c) => c !== cluster && c.provider === cluster.provider && c.name === cluster.name);

/**
 * A cluster named as a live one, in another region, zone or resource group of the same cloud: under the
 * weak names the command is built with, both want one profile name. The profile on the hub keeps it; the
 * newcomer gets its own (I1 holds the incumbent's profile to it: never deleted, re-created or marked missing).
 */
/** Letters `toLowerCase()` or `toUpperCase()` takes for an ASCII one, and ARM does not: KELVIN SIGN, LONG S, DOTLESS I. */
const CASE_TWINS: Record<string, string> = { k: '\u212A', s: '\u017F', i: '\u0131' };

/**
 * An AKS twin's resource group: on an even pick, the resource group of the cluster it mimics with a letter ARM
 * tells apart and a wider case fold would not (test/property/unicodeTwins.test.ts draws them all), when it has
 * such a letter and ARM holds no such group yet; else a group of its own.
 */
function twinGroup(model: Readonly<Model>, of: Model['live'][number], pick: number, n: number): string {
  const group = of.group ?? `rg-${of.name}`;
  const at = [...group].findIndex((c) => c in CASE_TWINS);
  if (pick % 2 === 0 && at >= 0) {
    const twin = [...group].map((c, i) => (i === at ? CASE_TWINS[c]! : c)).join('');
    const held = model.live.some(
      (c) =>
        c.provider === 'aks' && c.name === of.name && armCase(c.group ?? `rg-${c.name}`) === armCase(twin),
    );
    if (!held) return twin;
  }
  return `rg-${of.name.slice(0, 50)}-twin${n}`;
}

class CreateTwin implements Command {
  readonly pick: number;
  constructor(pick: number) {
    this.pick = pick;
  }
  check = (model: Readonly<Model>) => model.live.length > 0;
  async run(model: Model, real: Real) {
    const of = model.live[this.pick % model.live.length]!;
    const taken = (location: string) =>
      model.live.some((c) => c.provider === of.provider && c.name === of.name && c.location === location);
    const n = model.next++;
    const location =
      of.provider === 'eks'
        ? EKS_REGIONS.find((r) => !taken(r))
        : of.provider === 'gke'
          ? GKE_LOCATIONS.find((l) => !taken(l))
          : AKS_LOCATIONS[this.pick % AKS_LOCATIONS.length]!;
    if (location === undefined) return;
    const group = of.provider === 'aks' ? twinGroup(model, of, this.pick, n) : undefined;
    await createCluster(real.emulators, of.provider, of.name, location, group);
    model.live.push({ provider: of.provider, name: of.name, location, ...(group ? { group } : {}) });
  }
  toString = () => `a twin of #${this.pick} (its name, elsewhere)`;
}

class DeleteCluster implements Command {
  readonly pick: number;
  constructor(pick: number) {
    this.pick = pick;
  }
  check = (model: Readonly<Model>) => model.live.length > 0;
  async run(model: Model, real: Real) {
    const [cluster] = model.live.splice(this.pick % model.live.length, 1);
    await deleteCluster(real.emulators, cluster!);
    await real.afterCloudChange();
  }
  toString = () => `delete #${this.pick}`;
}

/** Whether the model has a live GKE or AKS cluster (whose local server's record a step can change). */
const hasServerCluster = (model: Readonly<Model>) => model.live.some((c) => c.provider !== 'eks');

/** Changes the local server's record of the `pick`th live GKE or AKS cluster. */
function changeServerCluster(
  model: Model,
  real: Real,
  pick: number,
  change: { gke: (cluster: GkeClusterJson) => void; aks: (cluster: ManagedClusterJson) => void },
): void {
  const candidates = model.live.filter((c) => c.provider !== 'eks');
  const cluster = candidates[pick % candidates.length]!;
  if (cluster.provider === 'gke')
    for (const c of real.emulators.gke.clusters.get(GCP_PROJECT) ?? [])
      if (c.name === cluster.name) change.gke(c);
  if (cluster.provider === 'aks')
    for (const c of real.emulators.arm.clusters.get(AZURE_SUBSCRIPTION) ?? [])
      if (c.name === cluster.name) change.aks(c);
}

class UpgradeCluster implements Command {
  readonly pick: number;
  constructor(pick: number) {
    this.pick = pick;
  }
  check = hasServerCluster;
  async run(model: Model, real: Real) {
    const minor = `1.3${1 + (this.pick % 3)}.${this.pick}`;
    changeServerCluster(model, real, this.pick, {
      gke: (c) => (c.currentMasterVersion = `${minor}-gke.100`),
      aks: (c) => (c.properties.currentKubernetesVersion = minor),
    });
  }
  toString = () => `upgrade #${this.pick}`;
}

class MoveZone implements Command {
  readonly pick: number;
  constructor(pick: number) {
    this.pick = pick;
  }
  check = (model: Readonly<Model>) =>
    model.live.some((c) => c.provider === 'gke' && /-[bc]$/.test(c.location) && !twinned(model, c));
  async run(model: Model, real: Real) {
    const candidates = model.live.filter(
      (c) => c.provider === 'gke' && /-[bc]$/.test(c.location) && !twinned(model, c),
    );
    const cluster = candidates[this.pick % candidates.length]!;
    await deleteCluster(real.emulators, cluster);
    const to = cluster.location.endsWith('-b') ? 'europe-west1-c' : 'europe-west1-b';
    await real.afterCloudChange();
    await createCluster(real.emulators, 'gke', cluster.name, to);
    cluster.location = to;
  }
  toString = () => `move a zonal GKE cluster #${this.pick} to the other zone of its region`;
}

/**
 * A live GKE or AKS cluster the cloud starts changing: upgraded (GKE RECONCILING, AKS Upgrading), being
 * deleted (STOPPING, Deleting) — or a new cluster still being created (no endpoint, no CA yet).
 */
class EnterChange implements Command {
  readonly pick: number;
  readonly transition: Transition;
  constructor(pick: number, transition: Transition) {
    this.pick = pick;
    this.transition = transition;
  }
  check = () => true;
  async run(model: Model, real: Real) {
    let cluster: Model['live'][number] | undefined;
    if (this.transition === 'creating') {
      const provider = this.pick % 2 === 0 ? 'gke' : 'aks';
      const name = `n${model.next++}`;
      const location = provider === 'gke' ? 'europe-west1' : 'westeurope';
      await createCluster(real.emulators, provider, name, location);
      cluster = { provider, name, location };
      model.live.push(cluster);
    } else {
      const steady = model.live.filter((c) => c.provider !== 'eks' && !c.inChange && !twinned(model, c));
      cluster = steady[this.pick % Math.max(steady.length, 1)];
      if (!cluster) return;
    }
    const { settle } = holdTransition(real.emulators, cluster.provider, cluster.name, this.transition);
    cluster.inChange = this.transition;
    real.holds.set(`${cluster.provider}/${cluster.name}`, settle);
  }
  toString = () => `${this.transition} #${this.pick}`;
}

/** The cloud finishes its change of one cluster: running again, or (deleted) gone. */
function settleCluster(model: Model, real: Real, cluster: Model['live'][number]): void {
  real.holds.get(`${cluster.provider}/${cluster.name}`)?.();
  real.holds.delete(`${cluster.provider}/${cluster.name}`);
  if (cluster.inChange === 'deleting') model.live.splice(model.live.indexOf(cluster), 1);
  delete cluster.inChange;
}

/** Every cluster in change settles. */
async function settleAll(model: Model, real: Real): Promise<void> {
  for (const cluster of model.live.filter((c) => c.inChange)) settleCluster(model, real, cluster);
  await real.afterCloudChange();
}

class Settle implements Command {
  readonly pick: number;
  constructor(pick: number) {
    this.pick = pick;
  }
  check = (model: Readonly<Model>) => model.live.some((c) => c.inChange);
  async run(model: Model, real: Real) {
    const changing = model.live.filter((c) => c.inChange);
    settleCluster(model, real, changing[this.pick % changing.length]!);
    await real.afterCloudChange();
  }
  toString = () => `settle #${this.pick}`;
}

/**
 * `sync --follow`: the full sync, then the clusters in change looked at every second; the clouds settle
 * them once a look has found one still in change (or failed), so that the follow has seen them in change
 * (or the follow's own bound ends it).
 */
class FollowedSync implements Command {
  check = () => true;
  async run(model: Model, real: Real) {
    let following = false;
    /** The clouds settling, begun while the follow runs: awaited before anything else (nothing outlives the step). */
    let settling: Promise<void> | undefined;
    const run = await real.cli(['sync', '--follow'], {
      onStderr: (stderr) => {
        following ||= /following \d+ cluster/.test(stderr);
        if (settling || !following || !/: (still |look failed)/.test(stderr)) return;
        settling = settleAll(model, real);
      },
    });
    await settling;
    assert.ok(run.code === 0 || run.code === 1, `exit ${run.code}: ${run.stderr}`);
    if (following) {
      assert.match(run.stderr, /followed: \d+ settled/, run.stderr);
      await settleAll(model, real);
    }
    await real.afterSync([run]);
  }
  toString = () => 'sync --follow';
}

const SELECTIONS: ReadonlyArray<{ args: string[]; refused?: boolean }> = [
  { args: [] },
  { args: ['--provider', 'eks'] },
  { args: ['--provider', 'gke', '--provider', 'aks'] },
  { args: ['--scope', `eks/${EKS_ACCOUNT}`] },
  { args: ['--scope', `eks/${EKS_ACCOUNT}/us-east-1`] },
  { args: ['--scope', `eks/${EKS_ACCOUNT}/EU-WEST-1`] },
  { args: ['--scope', `gke/${GCP_PROJECT}`] },
  { args: ['--scope', `gke/${GCP_PROJECT.toUpperCase()}/Europe-West1`] },
  { args: ['--scope', `gke/${GCP_PROJECT}/us-central1`] },
  { args: ['--scope', `aks/${AZURE_SUBSCRIPTION.toUpperCase()}`] },
  { args: ['--scope', `aks/${AZURE_SUBSCRIPTION}/West Europe`] },
  { args: ['--scope', `aks/${AZURE_SUBSCRIPTION}/eastus`, '--scope', `gke/${GCP_PROJECT}/europe-west1`] },
  { args: ['--scope', `eks/${EKS_ACCOUNT}/ap-south-1`], refused: true },
  { args: ['--scope', `gke/${GCP_PROJECT}/europe-west1-b`], refused: true },
  { args: ['--scope', 'eks/999999999999'], refused: true },
];

class Sync implements Command {
  readonly selection: number;
  readonly busGone: boolean;
  constructor(selection: number, busGone: boolean) {
    this.selection = selection;
    this.busGone = busGone;
  }
  check = () => true;
  async run(_model: Model, real: Real) {
    const { args, refused } = SELECTIONS[this.selection % SELECTIONS.length]!;
    const run = await real.cli(
      ['sync', ...args],
      this.busGone ? { started: (child) => child.stdout.destroy() } : {},
    );
    if (refused) assert.equal(run.code, 2, run.stderr);
    else assert.ok(run.code === 0 || run.code === 1, `exit ${run.code}: ${run.stderr}`);
    await real.afterSync([run]);
    if (
      !refused &&
      !this.busGone &&
      args.length === 0 &&
      / 0 pending/.test(run.stderr) &&
      !/intent\(s\)/.test(run.stderr)
    )
      real.quiet();
  }
  toString = () =>
    `sync ${SELECTIONS[this.selection % SELECTIONS.length]!.args.join(' ') || '(everything)'}${this.busGone ? ' with stdout closed' : ''}`;
}

/** When a run is stopped: as its first event comes out (in the middle of its work), or after a while. */
type KillPoint = { afterFirstEvent: true } | { afterMillis: number };

class KilledSync implements Command {
  readonly selection: number;
  readonly signal: 'SIGKILL' | 'SIGTERM' | 'SIGINT';
  readonly at: KillPoint;
  constructor(selection: number, signal: 'SIGKILL' | 'SIGTERM' | 'SIGINT', at: KillPoint) {
    this.selection = selection;
    this.signal = signal;
    this.at = at;
  }
  check = () => true;
  async run(_model: Model, real: Real) {
    const { args } = SELECTIONS[this.selection % SELECTIONS.length]!;
    let timer: NodeJS.Timeout | undefined;
    let sent = false;
    const at = this.at;
    const run = await real.cli(['sync', ...args], {
      started: (child) => {
        if ('afterMillis' in at) timer = setTimeout(() => child.kill(this.signal), at.afterMillis);
      },
      onStdout: (_text, child) => {
        if ('afterFirstEvent' in at && !sent) child.kill(this.signal);
        sent = true;
      },
    });
    clearTimeout(timer);
    const expected = [0, 1, 2, 130, 143, null];
    assert.ok(expected.includes(run.code), `exit ${run.code}: ${run.stderr}`);
    await real.afterSync([run]);
  }
  toString = () =>
    `sync ${SELECTIONS[this.selection % SELECTIONS.length]!.args.join(' ') || '(everything)'} killed by ${this.signal} ${'afterMillis' in this.at ? `after ${this.at.afterMillis} ms` : 'as its first event comes out'}`;
}

class ConcurrentSyncs implements Command {
  readonly first: number;
  readonly second: number;
  constructor(first: number, second: number) {
    this.first = first;
    this.second = second;
  }
  check = () => true;
  async run(_model: Model, real: Real) {
    const runs = await Promise.all(
      [this.first, this.second].map((s) => real.cli(['sync', ...SELECTIONS[s % SELECTIONS.length]!.args])),
    );
    for (const run of runs) assert.ok([0, 1, 2].includes(run.code ?? -1), `exit ${run.code}: ${run.stderr}`);
    await real.afterSync(runs);
  }
  toString = () =>
    `two syncs at once: ${[this.first, this.second].map((s) => SELECTIONS[s % SELECTIONS.length]!.args.join(' ') || '(everything)').join(' | ')}`;
}

class CorruptOutbox implements Command {
  readonly kind: 'empty' | 'truncated' | 'intent';
  constructor(kind: 'empty' | 'truncated' | 'intent') {
    this.kind = kind;
  }
  check = () => true;
  async run(_model: Model, real: Real) {
    const directory = join(real.directory, 'outbox', ...(this.kind === 'intent' ? ['intents'] : []));
    mkdirSync(directory, { recursive: true });
    writeFileSync(
      join(directory, `0000-${this.kind}-${Date.now()}.json`),
      this.kind === 'empty' ? '' : '[{"source":"cpsync","detail',
    );
  }
  toString = () => `an unreadable outbox file (${this.kind})`;
}

class JunkInHub implements Command {
  readonly kind: 'scalar' | 'list' | 'no-spec';
  constructor(kind: 'scalar' | 'list' | 'no-spec') {
    this.kind = kind;
  }
  check = () => true;
  async run(_model: Model, real: Real) {
    const directory = join(real.directory, 'inventory', 'stateful');
    mkdirSync(directory, { recursive: true });
    const file = join(directory, `junk-${this.kind}-${real.junk.size}.yaml`);
    const text = {
      scalar: '7\n',
      list: '- a\n- b\n',
      'no-spec': stringify({
        apiVersion: 'multicluster.x-k8s.io/v1alpha1',
        kind: 'ClusterProfile',
        metadata: { name: 'x', labels: { 'x-k8s.io/cluster-manager': 'cpsync' } },
      }),
    }[this.kind];
    writeFileSync(file, text);
    real.junk.set(file, text);
  }
  toString = () => `junk in the hub (${this.kind})`;
}

class CloudOutage implements Command {
  readonly provider: 'gke' | 'aks';
  constructor(provider: 'gke' | 'aks') {
    this.provider = provider;
  }
  check = () => true;
  async run(_model: Model, real: Real) {
    const { emulators } = real;
    if (this.provider === 'gke') {
      emulators.gke.failures.set(
        GCP_PROJECT,
        Array.from({ length: 30 }, () => ({ status: 403, code: 'PERMISSION_DENIED', message: 'outage' })),
      );
      real.outages.push(() => emulators.gke.failures.delete(GCP_PROJECT));
    } else {
      emulators.arm.failures.set(
        AZURE_SUBSCRIPTION,
        Array.from({ length: 60 }, () => ({ status: 403, code: 'AuthorizationFailed', message: 'outage' })),
      );
      real.outages.push(() => emulators.arm.failures.delete(AZURE_SUBSCRIPTION));
    }
  }
  toString = () => `${this.provider} refuses every call until the next sync is over`;
}

/** Characters that act on a terminal instead of showing (tab and newline aside). */
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/;
// eslint-disable-next-line no-control-regex
const ACTING = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u200b-\u200f\u202a-\u202e\u2066-\u2069]/;

/** What a hostile cloud may say: markup, mentions, terminal controls, bidi and zero-width characters, long text. */
const hostileText = fc.oneof(
  fc.constantFrom(
    '<script>alert(1)</script><!channel> [x](javascript:alert(1)) **b**',
    '\u001b]0;title\u0007\u001b[2J\r\nforged line',
    '\u202egnp.exe\u200b\u2066',
    '😀'.repeat(300),
  ),
  fc.string({ unit: 'binary', minLength: 1, maxLength: 256 }),
);

/**
 * A cloud that says hostile things of a cluster, within its rules: an Azure tag value (any character,
 * 256 at most), a GKE condition message (free text, any length). Then `cpsync list` shows the hub.
 */
class HostileStrings implements Command {
  readonly pick: number;
  readonly text: string;
  constructor(pick: number, text: string) {
    this.pick = pick;
    this.text = text;
  }
  check = hasServerCluster;
  async run(model: Model, real: Real) {
    changeServerCluster(model, real, this.pick, {
      gke: (c) => (c.conditions = [{ code: 'GCE_STOCKOUT', message: this.text.repeat(50) }]),
      aks: (c) => (c.tags = { ...c.tags, team: Array.from(this.text).slice(0, 256).join('') }),
    });
    await real.cli(['list']);
    await real.cli(['list', '--summary']);
    // The report shows the hub as it is: its one script, and no character that acts.
    const page = join(real.directory, 'report.html');
    await real.cli(['report', '--output', page]);
    const html = readFileSync(page, 'utf8');
    assert.equal(html.match(/<script/gi)?.length, 1, 'I5: the report holds its own script only');
    assert.equal(ACTING.exec(html), null, 'I5: the report shows every character');
  }
  toString = () => `hostile strings on #${this.pick}: ${JSON.stringify(this.text.slice(0, 40))}`;
}

const sync = fc.tuple(fc.nat(SELECTIONS.length - 1), fc.boolean()).map(([s, gone]) => new Sync(s, gone));
/** Syncs come up four times as often as any other step: the promises are kept (or broken) by syncs. */
const commands = [
  sync,
  sync,
  sync,
  sync,
  fc
    .tuple(fc.constantFrom('eks', 'gke', 'aks'), fc.nat(20))
    .map(([p, n]) => new CreateCluster(p as 'eks', n)),
  fc.nat(20).map((n) => new DeleteCluster(n)),
  fc.nat(20).map((n) => new CreateTwin(n)),
  fc.nat(20).map((n) => new UpgradeCluster(n)),
  fc.nat(20).map((n) => new MoveZone(n)),
  fc
    .tuple(
      fc.nat(SELECTIONS.length - 1),
      fc.constantFrom('SIGKILL', 'SIGTERM', 'SIGINT'),
      fc.oneof(
        fc.constant<KillPoint>({ afterFirstEvent: true }),
        fc.integer({ min: 900, max: 2400 }).map((afterMillis): KillPoint => ({ afterMillis })),
      ),
    )
    .map(([s, signal, at]) => new KilledSync(s, signal as 'SIGKILL', at)),
  fc
    .tuple(fc.nat(SELECTIONS.length - 1), fc.nat(SELECTIONS.length - 1))
    .map(([a, b]) => new ConcurrentSyncs(a, b)),
  fc.constantFrom('empty', 'truncated', 'intent').map((k) => new CorruptOutbox(k as 'empty')),
  fc.constantFrom('scalar', 'list', 'no-spec').map((k) => new JunkInHub(k as 'scalar')),
  fc.constantFrom('gke', 'aks').map((p) => new CloudOutage(p as 'gke')),
  fc.tuple(fc.nat(20), hostileText).map(([n, text]) => new HostileStrings(n, text)),
  fc
    .tuple(fc.nat(20), fc.constantFrom('creating', 'updating', 'deleting'))
    .map(([n, t]) => new EnterChange(n, t as Transition)),
  fc.nat(20).map((n) => new Settle(n)),
  fc.constant(new FollowedSync()),
];

describe('both promises over random sequences (stateful property test)', () => {
  let emulators: Emulators;
  let base: Record<string, unknown>;
  let command: string;

  before(async () => {
    command = await cliWithNames('weak');
    emulators = await startEmulators({ directory: temporaryDirectory('cpsync-stateful-') });
    base = parse(readFileSync(emulators.configPath, 'utf8')) as Record<string, unknown>;
  });
  after(async () => emulators?.stop());

  it('never deletes a live cluster and never loses or splits an event, whatever happens in between', async () => {
    let sequences = 0;
    let steps = 0;
    let cliRuns = 0;
    let collisions = 0;
    const trace: string[] = [];
    const started = Date.now();
    await fc.assert(
      fc.asyncProperty(fc.commands(commands, { maxCommands: 24, size: 'medium' }), async (sequence) => {
        // No sequence starts once the time is up, and none is cut off: one left running would go on reaching the
        // local clouds after they are stopped (fast-check's own time limit abandons the run in flight).
        if (Date.now() - started >= TIME_LIMIT_MILLIS) return;
        sequences += 1;
        // The same estate to start from every time: one cluster of each kind (and zone shape).
        await emulators.moto.reset();
        emulators.gke.clusters.set(GCP_PROJECT, [
          gkeCluster('analytics', 'europe-west1'),
          gkeCluster('edge', 'europe-west1-c'),
        ]);
        emulators.gke.failures.clear();
        emulators.arm.clusters.set(AZURE_SUBSCRIPTION, [aksCluster('web', 'rg-web')]);
        emulators.arm.failures.clear();
        await createEksClusters(emulators.moto.endpoint, EKS_ACCOUNT, 'us-east-1', [{ name: 'payments' }]);
        const model: Model = {
          live: [
            { provider: 'eks', name: 'payments', location: 'us-east-1' },
            { provider: 'gke', name: 'analytics', location: 'europe-west1' },
            { provider: 'gke', name: 'edge', location: 'europe-west1-c' },
            { provider: 'aks', name: 'web', location: 'westeurope' },
          ],
          next: 0,
        };
        const real = new Real(emulators, base, sequences, command);
        // A running inventory to start from: what follows changes it.
        await real.afterSync([await real.cli(['sync'])]);
        await fc.asyncModelRun(() => ({ model, real }), sequence);
        trace.push(String(sequence));
        steps += [...sequence].length;
        // The clouds finish what they were doing; then the inventory converges.
        await settleAll(model, real);
        await real.converged();
        cliRuns += real.runs;
        collisions += real.collisions;
      }),
      {
        seed: SEED,
        // A failure's `path` (with its seed) replays just that sequence.
        ...(process.env.CPSYNC_PROPERTY_PATH ? { path: process.env.CPSYNC_PROPERTY_PATH } : {}),
        numRuns: 40,
        endOnFailure: true,
        verbose: process.env.CPSYNC_PROPERTY_VERBOSE ? 2 : 1,
      },
    );
    if (process.env.CPSYNC_PROPERTY_VERBOSE) console.log(JSON.stringify(trace, null, 1));
    console.log(
      `stateful property: seed ${SEED}, ${sequences} random sequences, ${steps} steps, ${cliRuns} CLI runs (${collisions} name collisions reported) in ${((Date.now() - started) / 1000).toFixed(1)} s`,
    );
    assert.ok(sequences >= 3, `only ${sequences} sequences ran in the time allowed`);
  });
});
