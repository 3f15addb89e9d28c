/** The shipped manifests, imported as text (`with { type: 'text' }`): bundled into the command by esbuild. */
declare module '*.yaml' {
  const text: string;
  export default text;
}
