/**
 * `npm run emulators`: starts the local estate (EKS/STS/EventBridge/SQS in moto, GKE and ARM servers,
 * and a real hub) in `.emulators/`, prints how to point cpsync at it, and runs until interrupted.
 */
import { rmSync } from 'node:fs';
import { resolve } from 'node:path';
import { startEmulators } from './emulators.ts';

const directory = resolve('.emulators');
rmSync(directory, { recursive: true, force: true });
const emulators = await startEmulators({
  directory,
  withHub: process.argv[2] !== '--file-hub',
  log: (line) => console.error(line),
});
console.log(`Local estate ready (${emulators.clusters} clusters: EKS, GKE, AKS). In another shell:

  source .emulators/env
  npx cpsync sync --config .emulators/cpsync.yaml --dry-run
  npx cpsync sync --config .emulators/cpsync.yaml
  npx cpsync list --config .emulators/cpsync.yaml
${emulators.hub ? `\nThe hub is a real kube-apiserver: export KUBECONFIG=${emulators.hub.kubeconfig}\n` : ''}
Events reach the EventBridge bus "cpsync-events" and, through a rule, the SQS queue ${emulators.queueUrl}.
Press Ctrl-C to stop.`);

const stop = async () => {
  await emulators.stop();
  process.exit(0);
};
process.once('SIGINT', () => void stop());
process.once('SIGTERM', () => void stop());
setInterval(() => {}, 1 << 30);
