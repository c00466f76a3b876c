// What the Lambda bundles get for `node:http` (cdk/bundling.ts, esbuild alias): the built-in's
// CommonJS exports. An ESM `import ... from 'node:http'` makes Node build the module's ESM facade,
// which reads every export, and reading `WebSocket` loads undici's fetch and WebSocket stack
// (about 10 ms of CPU at each cold start); this hands the exports over without reading them.
module.exports = process.getBuiltinModule('node:http');
