/**
 * Cases that build on each other (one inventory changed in turn), for files whose tests run in a random
 * order (the end-to-end tests): declared with `step`, run in the order declared by the one test `run`
 * makes; a failure names its step.
 */
export function orderedSteps() {
  const steps: Array<{ name: string; run: () => Promise<void> }> = [];
  return {
    step: (name: string, run: () => Promise<void>) => void steps.push({ name, run }),
    async run() {
      for (const { name, run } of steps) {
        try {
          await run();
        } catch (error) {
          if (error instanceof Error) error.message = `${name}: ${error.message}`;
          throw error;
        }
      }
    },
  };
}
