// Per-request state every middleware and route shares.
import type { Principal } from '../core/orgs.ts';
import type { Logger } from '../core/logger.ts';

declare module 'koa' {
  interface DefaultState {
    requestId: string;
    log: Logger;
    principal?: Principal;
    /** The exact bytes of a JSON body, when one was read. */
    rawBody?: Buffer;
  }
}
export {};
