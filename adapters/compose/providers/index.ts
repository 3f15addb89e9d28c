/** Every cloud cpsync knows; entry points that need only some import those modules alone. */
import { aksProvider } from './aks.ts';
import { eksProvider } from './eks.ts';
import { gkeProvider } from './gke.ts';

export const ALL_PROVIDERS = [eksProvider, gkeProvider, aksProvider] as const;
