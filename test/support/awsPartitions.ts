/**
 * AWS's partitions as AWS documents them (the ARN and endpoint reference): how each names its regions and the
 * domain of its endpoints. The tests' oracle for which partition a region is in; cpsync reads the AWS SDK's own
 * table instead, so the two are checked against each other, not one against itself.
 */
import fc from 'fast-check';

export interface DocumentedPartition {
  name: string;
  dnsSuffix: string;
  /** What its regions' names begin with, before `-<direction>-<n>`. */
  prefixes: readonly string[];
  /** Regions it has today. */
  regions: readonly string[];
}

const PARTITIONS: readonly DocumentedPartition[] = [
  {
    name: 'aws',
    dnsSuffix: 'amazonaws.com',
    prefixes: ['us', 'eu', 'ap', 'sa', 'ca', 'me', 'af', 'il', 'mx'],
    regions: [
      'us-east-1',
      'eu-west-2',
      'ap-southeast-5',
      'sa-east-1',
      'ca-west-1',
      'me-central-1',
      'il-central-1',
    ],
  },
  {
    name: 'aws-cn',
    dnsSuffix: 'amazonaws.com.cn',
    prefixes: ['cn'],
    regions: ['cn-north-1', 'cn-northwest-1'],
  },
  {
    name: 'aws-us-gov',
    dnsSuffix: 'amazonaws.com',
    prefixes: ['us-gov'],
    regions: ['us-gov-west-1', 'us-gov-east-1'],
  },
  {
    name: 'aws-iso',
    dnsSuffix: 'c2s.ic.gov',
    prefixes: ['us-iso'],
    regions: ['us-iso-east-1', 'us-iso-west-1'],
  },
  { name: 'aws-iso-b', dnsSuffix: 'sc2s.sgov.gov', prefixes: ['us-isob'], regions: ['us-isob-east-1'] },
  { name: 'aws-iso-e', dnsSuffix: 'cloud.adc-e.uk', prefixes: ['eu-isoe'], regions: ['eu-isoe-west-1'] },
  {
    name: 'aws-iso-f',
    dnsSuffix: 'csp.hci.ic.gov',
    prefixes: ['us-isof'],
    regions: ['us-isof-south-1', 'us-isof-east-1'],
  },
  { name: 'aws-eusc', dnsSuffix: 'amazonaws.eu', prefixes: ['eusc-de'], regions: ['eusc-de-east-1'] },
];

/** The documented partition of `region`: the one whose longest prefix begins its name. */
export function documentedPartitionOf(region: string): DocumentedPartition {
  let best: { partition: DocumentedPartition; length: number } | undefined;
  for (const partition of PARTITIONS)
    for (const prefix of partition.prefixes)
      if (region.startsWith(`${prefix}-`) && (best === undefined || prefix.length > best.length))
        best = { partition, length: prefix.length };
  return best?.partition ?? PARTITIONS[0]!;
}

const DIRECTIONS = [
  'north',
  'south',
  'east',
  'west',
  'central',
  'northeast',
  'southeast',
  'northwest',
  'southwest',
];

/** A region of any partition: one it has today, or one named as its regions are (`cn-southwest-7`). */
export const anyRegion: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(...PARTITIONS.flatMap((p) => p.regions)),
  fc
    .tuple(
      fc.constantFrom(...PARTITIONS.flatMap((p) => p.prefixes)),
      fc.constantFrom(...DIRECTIONS),
      fc.integer({ min: 1, max: 9 }),
    )
    .map(([prefix, direction, n]) => `${prefix}-${direction}-${n}`),
);
