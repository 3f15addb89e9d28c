/**
 * When to look again at a cluster in change: one schedule for `cpsync sync --follow` and the deployed
 * chase. GKE and AKS tell cpsync when an operation ends (an audit entry, an Activity Log event), so their
 * looks are a backstop: the first after `firstDelayMillis`, the wait doubling up to `maxDelayMillis`. EKS
 * tells nothing, so its looks are placed by how long the operation typically takes: the wait is a share
 * (`tightening`) of the time left to the typical end, or past it, kept between a floor and a cap, and a
 * chase makes at most `maxLooks` looks. Pure: given the moment and the knobs, it says the next wait.
 */
import type { Provider } from './model/observedCluster.ts';

export type Operation = 'create' | 'update' | 'delete';

export interface EksLookSchedule {
  /** How long each operation typically takes. */
  typicalMillis: Readonly<Record<Operation, number>>;
  /** The shortest wait (at the typical time). */
  minDelayMillis: number;
  /** The longest wait (far from the typical time). */
  maxDelayMillis: number;
  /** The wait as a share of the time to (or past) the typical end, in (0, 1]. */
  tightening: number;
  /** The most looks one chase makes. */
  maxLooks: number;
}

export interface LookSchedule {
  firstDelayMillis: number;
  maxDelayMillis: number;
  eks: EksLookSchedule;
}

/** Where a chase stands when it places its next look. */
export interface ChaseMoment {
  provider: Provider;
  /** The state in change the last look found (`EKS CREATING`, `EKS node group workers UPDATING`, …). */
  state: string;
  /** Looks made so far (0 before the first). */
  looks: number;
  /** The wait before the last look (none before the first). */
  previousDelayMillis?: number;
  /** When the operation began (epoch milliseconds): the cluster's `createdAt` while it is created, else the chase's start. */
  sinceMillis: number;
  nowMillis: number;
}

/** The operation a state in change belongs to (a node group's change is an update of the cluster). */
export function operationOf(state: string): Operation {
  if (/\bnode group\b/i.test(state)) return 'update';
  if (/\bDELET/i.test(state)) return 'delete';
  if (/\b(CREATING|PENDING|PROVISIONING)\b/i.test(state)) return 'create';
  return 'update';
}

const clamp = (value: number, low: number, high: number) => Math.min(high, Math.max(low, value));

/**
 * The wait before the next look in milliseconds, whole seconds (SQS delays are whole seconds; the knobs
 * are whole seconds, so the floor and the cap hold after rounding), or undefined when the chase has made all its looks (then the schedule takes over).
 */
export function nextLookDelay(schedule: LookSchedule, moment: ChaseMoment): number | undefined {
  if (moment.provider !== 'eks') {
    const delay =
      moment.looks === 0 || moment.previousDelayMillis === undefined
        ? schedule.firstDelayMillis
        : Math.min(Math.max(moment.previousDelayMillis, 1000) * 2, schedule.maxDelayMillis);
    return Math.ceil(delay / 1000) * 1000;
  }
  const eks = schedule.eks;
  if (moment.looks >= eks.maxLooks) return undefined;
  const typical = eks.typicalMillis[operationOf(moment.state)];
  const elapsed = Math.max(0, moment.nowMillis - moment.sinceMillis);
  const left = typical - elapsed;
  // Before the typical end: a share of what is left (never past it by more than the floor); after it, the
  // floor and a share of the overrun, so an operation that runs long is looked at less and less often.
  const wanted = left > 0 ? eks.tightening * left : eks.minDelayMillis + eks.tightening * -left;
  return Math.round(clamp(wanted, eks.minDelayMillis, eks.maxDelayMillis) / 1000) * 1000;
}

/** The schedule the configuration's `follow` section describes. */
export function lookScheduleOf(follow: {
  firstDelaySeconds: number;
  maxDelaySeconds: number;
  eks: {
    typicalSeconds: Readonly<Record<Operation, number>>;
    minDelaySeconds: number;
    maxDelaySeconds: number;
    tightening: number;
    maxLooks: number;
  };
}): LookSchedule {
  const { typicalSeconds, minDelaySeconds, maxDelaySeconds, tightening, maxLooks } = follow.eks;
  return {
    firstDelayMillis: follow.firstDelaySeconds * 1000,
    maxDelayMillis: follow.maxDelaySeconds * 1000,
    eks: {
      typicalMillis: {
        create: typicalSeconds.create * 1000,
        update: typicalSeconds.update * 1000,
        delete: typicalSeconds.delete * 1000,
      },
      minDelayMillis: minDelaySeconds * 1000,
      maxDelayMillis: maxDelaySeconds * 1000,
      tightening,
      maxLooks,
    },
  };
}
