/** RFC 3339 at whole seconds, the precision Kubernetes keeps for condition and property times. */
export function timestamp(date: Date): string {
  return date.toISOString().replace(/\.\d{3}Z$/, 'Z');
}
