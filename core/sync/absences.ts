/** A lagging listing's absences, asked of the cloud before a plan may take them for clusters gone. */
import { ANNOTATION_PROVIDER_ID } from '../domain/constants.ts';
import type { ClusterProfile } from '../domain/model/clusterProfile.ts';
import type { ObservedCluster } from '../domain/model/observedCluster.ts';
import { canonicalProviderId } from '../domain/naming.ts';
import { deletedByCpsync } from '../domain/ownership.ts';
import { providerIdInScope } from '../domain/scopes.ts';
import type { AbsenceAnswer, ScopeListing } from './ports.ts';

/**
 * Asks a lagging listing's cloud about the scope's profiles it did not show (see `ScopeListing.confirmAbsent`):
 * the listing with the clusters found there added, and made partial (naming them) for those the cloud could
 * not answer for; and the provider ids the cloud answered gone. A question that fails leaves every absence
 * unknown: nothing is deleted by it.
 */
export async function confirmAbsences(
  listing: ScopeListing & { confirmAbsent: NonNullable<ScopeListing['confirmAbsent']> },
  current: readonly ClusterProfile[],
  signal?: AbortSignal,
): Promise<{ listing: ScopeListing; present: ObservedCluster[]; gone: string[] }> {
  // Ids compared as the cloud compares them: Azure's in any case, EKS ARNs and GKE self links exactly.
  const { provider } = listing.outcome.scope;
  const key = (providerId: string) => canonicalProviderId({ provider, providerId });
  const shown = new Set(listing.clusters.map((c) => key(c.providerId)));
  const absent = [
    ...new Set(
      current
        // A profile cpsync deleted already is not asked after; one another writer deleted is (cpsync deletes it in turn).
        .filter((p) => !deletedByCpsync(p))
        .map((p) => p.metadata.annotations?.[ANNOTATION_PROVIDER_ID] ?? '')
        // Only the scope's own clusters are asked after: a profile whose id is another scope's is not its to judge.
        .filter((id) => id !== '' && !shown.has(key(id)) && providerIdInScope(id, listing.outcome.scope)),
    ),
  ].sort();
  if (absent.length === 0) return { listing, present: [], gone: [] };
  let answer: AbsenceAnswer;
  try {
    answer = await listing.confirmAbsent(absent, signal);
  } catch {
    answer = { present: [], gone: [], unknown: absent };
  }
  const asked = new Set(absent);
  const present = answer.present.filter((c) => !shown.has(key(c.providerId)));
  const gone = answer.gone.filter((id) => asked.has(id));
  const answered = new Set([...present.map((c) => key(c.providerId)), ...gone.map(key)]);
  const unknown = absent.filter((id) => !answered.has(key(id)));
  return {
    listing: {
      outcome:
        unknown.length > 0
          ? { ...listing.outcome, kind: 'partial', missing: [...(listing.outcome.missing ?? []), ...unknown] }
          : listing.outcome,
      clusters: [...listing.clusters, ...present],
    },
    present,
    gone,
  };
}
