/**
 * The composition root: the one place configuration, credentials and SDK clients meet. The CLI and
 * every Lambda function call `compose(config, providers)` and get the engine's ports, the scopes the
 * configuration covers, the settings every run takes, and one `close()`.
 */
import { resolve } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import type { Provider } from '../../core/domain/model/observedCluster.ts';
import type { EnginePorts } from '../../core/sync/engine.ts';
import type { AccessGrants, EventSink, MemberProbe } from '../../core/sync/ports.ts';
import type { CloudGrantsOptions } from '../grants/CloudGrants.ts';
import { memoizeUntilFailure } from '../shared/memo.ts';
import type { MemberProbeOptions } from '../member/KubernetesMemberProbe.ts';
import { EventBridgeBus } from '../bus/EventBridgeBus.ts';
import { JsonLinesFileBus, StreamBus } from '../bus/JsonLinesBus.ts';
import { DynamoIntentLog, DynamoOutbox, OutboxTable } from '../outbox/DynamoOutbox.ts';
import { FileIntentLog } from '../outbox/FileIntentLog.ts';
import { FileGrantLedger } from '../outbox/FileGrantLedger.ts';
import { DynamoGrantLedger } from '../outbox/DynamoGrantLedger.ts';
import { FileOutbox } from '../outbox/FileOutbox.ts';
import type { CpsyncConfig } from './config.ts';
import { absenceStore } from './absences.ts';
import { connectHub, stateDirectoryOf } from './hub.ts';
import { resolveScopes, type ResolvedScopes, type ScopeRequest } from './scopeCoverage.ts';
import { engineSettings, type EngineSettings } from './settings.ts';
import type { BuildOptions, ProviderInstance, ProviderModule } from './provider.ts';

export type { ProviderInstance, ProviderModule };

/** Everything an entry point runs the engine with. */
export interface Composition {
  config: CpsyncConfig;
  ports: EnginePorts;
  /** What every run takes from the configuration (options, event source, deadlines, leases). */
  settings: EngineSettings;
  /** The configured clouds among the provider modules given. */
  providers: Partial<Record<Provider, ProviderInstance>>;
  /** The scopes to sync for a request, checked against the configuration (see scopeCoverage.ts). */
  resolveScopes(request?: ScopeRequest): Promise<ResolvedScopes>;
  /** The hub's client configuration, when the hub is a cluster (renewed for an EKS hub). */
  hubKubeConfig?: () => Promise<KubeConfig>;
  /** Closes what the sources hold open (connections, channels). */
  close(): Promise<void>;
}

export interface ComposeOptions {
  /** Where the stdout bus writes. @default process.stdout */
  stdout?: NodeJS.WritableStream;
  /**
   * Build each configured cloud on first use (a scope, a cluster or a token of that cloud), not here: a
   * function then loads only the SDK of the cloud a message is about, and a cloud whose settings cannot be
   * used fails its own work only. The CLI builds every cloud here, so a bad setting stops it at once.
   * @default false
   */
  onDemand?: boolean;
  /** Every remembered answer set aside for this composition's reads (see `BuildOptions.fresh`). @default false */
  fresh?: boolean;
}

/** Each provider's own way of granting consumers (the `accessGrants` feature). */
const GRANTS_OF = {
  eks: 'accessEntries',
  gke: 'projectRoles',
  aks: 'roleAssignments',
} as const satisfies Record<Provider, keyof ProviderInstance>;

/**
 * A configured cloud built on its first use. Building it again after a failure is allowed (a secret that
 * could not be read may be readable on the next delivery).
 */
function onDemand(module: ProviderModule, config: CpsyncConfig, options: BuildOptions): ProviderInstance {
  let built: ProviderInstance | undefined;
  let building: Promise<ProviderInstance> | undefined;
  const load = () =>
    built
      ? Promise.resolve(built)
      : (building ??= module.build(config, options).then(
          (instance) => {
            if (!instance) throw new Error(`providers.${module.provider}: is not configured`);
            return (built = instance);
          },
          (error: unknown) => {
            building = undefined;
            throw error;
          },
        ));
  return {
    source: {
      listScope: async (scope, signal) => (await load()).source.listScope(scope, signal),
      getCluster: async (ref) => (await load()).source.getCluster(ref),
      isProviderIdOf: (providerId, ref) => module.isProviderIdOf(providerId, ref),
    },
    // Listed scopes are the configuration's own answer: no cloud, SDK or secret for them.
    scopes: async (accounts) => {
      const listed = module.listedScopes?.(config);
      if (!listed) return (await load()).scopes(accounts);
      return accounts ? listed.filter((scope) => accounts.includes(scope.account)) : listed;
    },
    async memberToken(target) {
      const instance = await load();
      if (!instance.memberToken) throw new Error(`providers.${module.provider}: gives no member tokens`);
      return instance.memberToken(target);
    },
    // The provider's own way of granting consumers (the access grants), loaded with it.
    [GRANTS_OF[module.provider]]: async () => {
      const instance = await load();
      const make = instance[GRANTS_OF[module.provider]] as (() => Promise<unknown>) | undefined;
      if (!make) throw new Error(`providers.${module.provider}: gives no ${GRANTS_OF[module.provider]}`);
      return make.call(instance);
    },
    close: async () => {
      await building?.catch(() => undefined);
      await built?.close?.();
    },
  };
}

/** The bus: EventBridge, a JSON-lines file, or JSON lines on stdout (the default). */
function buildBus(config: CpsyncConfig, stdout: NodeJS.WritableStream): EventSink {
  const bus = config.bus ?? { stdout: true as const };
  if ('eventBridge' in bus) {
    return new EventBridgeBus({
      busName: bus.eventBridge.busName,
      ...(bus.eventBridge.region ? { region: bus.eventBridge.region } : {}),
      ...(bus.eventBridge.endpoint ? { endpoint: bus.eventBridge.endpoint } : {}),
    });
  }
  if ('jsonl' in bus) return new JsonLinesFileBus(resolve(bus.jsonl));
  return new StreamBus(stdout as never);
}

/**
 * Where unpublished events and write-ahead intents wait: a DynamoDB table, or the configuration's state directory
 * (`stateDirectoryOf`; intents in its `intents/`).
 */
async function buildOutbox(
  config: CpsyncConfig,
): Promise<Pick<EnginePorts, 'outbox' | 'intents' | 'ledger'>> {
  const outbox = config.outbox;
  const directory = await stateDirectoryOf(config);
  // What cpsync granted: its own table, else the grants/ folder of the outbox's directory.
  const ledger = config.ledger
    ? new DynamoGrantLedger({
        tableName: config.ledger.table,
        ...(config.ledger.endpoint ? { endpoint: config.ledger.endpoint } : {}),
      })
    : directory !== undefined
      ? new FileGrantLedger(directory)
      : undefined;
  if (outbox !== undefined && 'table' in outbox) {
    const table = { tableName: outbox.table, ...(outbox.endpoint ? { endpoint: outbox.endpoint } : {}) };
    const shared = new OutboxTable(table);
    return {
      outbox: new DynamoOutbox(shared),
      intents: new DynamoIntentLog(shared),
      ...(ledger ? { ledger } : {}),
    };
  }
  return {
    outbox: new FileOutbox(directory!),
    intents: new FileIntentLog(directory!),
    ...(ledger ? { ledger } : {}),
  };
}

/** A member token for each configured provider, from its own credentials. */
function memberTokens(providers: Partial<Record<Provider, ProviderInstance>>): MemberProbeOptions['tokens'] {
  const tokens: MemberProbeOptions['tokens'] = {};
  for (const [provider, instance] of Object.entries(providers) as Array<[Provider, ProviderInstance]>)
    if (instance.memberToken) tokens[provider] = (target) => instance.memberToken!(target);
  return tokens;
}

/** The member probe (the `memberProbe` feature), with each configured provider's own credentials. */
async function memberProbe(
  config: CpsyncConfig,
  providers: Partial<Record<Provider, ProviderInstance>>,
  settings: EngineSettings,
): Promise<MemberProbe> {
  const { KubernetesMemberProbe } = await import('../member/KubernetesMemberProbe.ts');
  const probe = config.memberProbe;
  return new KubernetesMemberProbe({
    tokens: memberTokens(providers),
    accessProviderNames: config.inventory.accessProviderNames,
    localClouds: settings.options.localClouds,
    timeoutMillis: probe.timeoutSeconds * 1000,
    budgetMillis: probe.budgetSeconds * 1000,
    concurrency: probe.concurrency,
    pacing: { everyMillis: probe.everyMinutes * 60_000, slotMillis: probe.slotMinutes * 60_000 },
  });
}

/** Each configured provider's own way of granting consumers, made on first use. */
function grantsOf(
  providers: Partial<Record<Provider, ProviderInstance>>,
): Pick<CloudGrantsOptions, 'eks' | 'aks' | 'gke'> {
  const { eks, gke, aks } = providers;
  return {
    ...(eks?.accessEntries ? { eks: memoizeUntilFailure(() => eks.accessEntries!()) } : {}),
    ...(aks?.roleAssignments ? { aks: memoizeUntilFailure(() => aks.roleAssignments!()) } : {}),
    ...(gke?.projectRoles ? { gke: memoizeUntilFailure(() => gke.projectRoles!()) } : {}),
  };
}

/** The access grants (the `accessGrants` feature, and its turn-off), with each configured provider's own credentials. */
async function accessGrants(
  config: CpsyncConfig,
  providers: Partial<Record<Provider, ProviderInstance>>,
  settings: EngineSettings,
): Promise<AccessGrants> {
  const { CloudGrants } = await import('../grants/CloudGrants.ts');
  return new CloudGrants({
    tokens: memberTokens(providers),
    accessProviderNames: config.inventory.accessProviderNames,
    localClouds: settings.options.localClouds,
    manager: config.manager,
    // One member's access, and how often settled grants are looked at again: as the member probe's.
    timeoutMillis: config.memberProbe.timeoutSeconds * 1000,
    pacing: {
      everyMillis: config.memberProbe.everyMinutes * 60_000,
      slotMillis: config.memberProbe.slotMinutes * 60_000,
    },
    // Each cloud's own way of granting, made on first use (a failed making is tried again at the next use).
    ...grantsOf(providers),
  });
}

/**
 * Builds what `config` names, with the clouds of `modules` only (a function passes those it needs, so
 * its bundle carries no other cloud's SDK). What was built is closed again if a later part fails.
 */
export async function compose(
  config: CpsyncConfig,
  modules: readonly ProviderModule[],
  options: ComposeOptions = {},
): Promise<Composition> {
  const providers: Partial<Record<Provider, ProviderInstance>> = {};
  const close = async () => {
    for (const instance of Object.values(providers)) await instance.close?.();
  };
  try {
    for (const module of modules) {
      if (options.onDemand) {
        if (config.providers[module.provider])
          providers[module.provider] = onDemand(module, config, { fresh: options.fresh === true });
        continue;
      }
      const instance = await module.build(config, { fresh: options.fresh === true });
      if (instance) providers[module.provider] = instance;
    }
    const { hub, leases, kubeConfig } = await connectHub(config);
    const sources: EnginePorts['sources'] = {};
    for (const [provider, instance] of Object.entries(providers) as Array<[Provider, ProviderInstance]>)
      sources[provider] = instance.source;
    const settings = engineSettings(config);
    const members = config.features.memberProbe ? await memberProbe(config, providers, settings) : undefined;
    // Built whether the feature is on or not: turned off, it takes back what it granted.
    const grants = await accessGrants(config, providers, settings);
    return {
      config,
      ports: {
        sources,
        hub,
        leases,
        ...(members ? { members } : {}),
        grants,
        bus: buildBus(config, options.stdout ?? process.stdout),
        ...(await buildOutbox(config)),
        absences: await absenceStore(config),
      },
      settings,
      providers,
      resolveScopes: (request) => resolveScopes(config, providers, request),
      ...(kubeConfig ? { hubKubeConfig: kubeConfig } : {}),
      close,
    };
  } catch (error) {
    await close();
    throw error;
  }
}
