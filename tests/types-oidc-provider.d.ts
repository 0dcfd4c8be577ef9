// oidc-provider ships no types; the tests use its constructor and request handler only.
declare module 'oidc-provider' {
  import type { IncomingMessage, ServerResponse } from 'node:http'
  export default class Provider {
    constructor(issuer: string, configuration: unknown)
    callback(): (req: IncomingMessage, res: ServerResponse) => void
  }
}
