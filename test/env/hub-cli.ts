/** `npm run hub:start` / `npm run hub:stop`: the local hub in `.hub/`, admin kubeconfig at `.hub/kubeconfig`. */
import { resolve } from 'node:path';
import { startHub, stopHub } from './hub.ts';

const directory = resolve(process.env.CPSYNC_HUB_DIR ?? '.hub');
const command = process.argv[2];

if (command === 'start') {
  const state = await startHub(directory, (line) => console.error(line));
  console.log(`hub running at ${state.server}`);
  console.log(`export KUBECONFIG=${state.kubeconfig}`);
} else if (command === 'stop') {
  await stopHub(directory);
  console.log('hub stopped');
} else {
  console.error('usage: hub-cli.ts start|stop');
  process.exitCode = 2;
}
