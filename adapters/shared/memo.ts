/**
 * A value made on first use and shared by every caller after — but forgotten if making it failed, so
 * that the next caller tries again. A rejected promise is never kept: one failed read of a secret or
 * a discovery call must not fail every later request of a long-lived process (a warm Lambda container).
 */
export function memoizeUntilFailure<T>(make: () => Promise<T>): () => Promise<T> {
  let made: Promise<T> | undefined;
  return () => {
    if (made) return made;
    const attempt = make();
    made = attempt;
    attempt.catch(() => {
      if (made === attempt) made = undefined;
    });
    return attempt;
  };
}

/**
 * memoizeUntilFailure for `millis`: made again on the first use after that (a failed making, at once). For what a
 * discovery found, shared by every request of a long-lived process for a while.
 */
export function memoizeFor<T>(
  millis: number,
  make: () => Promise<T>,
  now: () => number = Date.now,
): () => Promise<T> {
  let made: { at: number; value: Promise<T> } | undefined;
  return () => {
    if (made && now() - made.at < millis) return made.value;
    const entry = { at: now(), value: make() };
    made = entry;
    entry.value.catch(() => {
      if (made === entry) made = undefined;
    });
    return entry.value;
  };
}
