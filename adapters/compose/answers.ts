/**
 * Where the sources remember the clouds' per-cluster answers (see `AnswerStore`): the configured DynamoDB table
 * (the functions'), else the `answers/` folder of the outbox's directory (the CLI's), else nowhere (a DynamoDB
 * outbox without a table: every sync asks). Both are cpsync's alone; the hub, which others write, never is.
 */
import type { AnswerStore } from '../../core/sync/ports.ts';
import type { CpsyncConfig } from './config.ts';
import type { BuildOptions } from './provider.ts';
import { stateDirectoryOf } from './hub.ts';

export async function answerStore(
  config: CpsyncConfig,
  options: BuildOptions = {},
): Promise<AnswerStore | undefined> {
  const store = await configuredStore(config);
  // Fresh: nothing read stands for the cloud's answer, and what the clouds say now is remembered over it.
  return store && options.fresh
    ? { read: () => Promise.resolve([]), write: (...a) => store.write(...a) }
    : store;
}

async function configuredStore(config: CpsyncConfig): Promise<AnswerStore | undefined> {
  if (config.answers) {
    const { DynamoAnswerStore } = await import('../outbox/DynamoAnswerStore.ts');
    return new DynamoAnswerStore({
      tableName: config.answers.table,
      ...(config.answers.endpoint ? { endpoint: config.answers.endpoint } : {}),
    });
  }
  const directory = await stateDirectoryOf(config);
  if (directory === undefined) return undefined;
  const { FileAnswerStore } = await import('../outbox/FileAnswerStore.ts');
  return new FileAnswerStore(directory);
}
