// One Temporal client per process, created at boot.
import { Client, Connection, isGrpcServiceError } from '@temporalio/client';
import { temporalClientInterceptors } from './tracing.ts';

export interface TemporalHandle {
  client: Client;
  connection: Connection;
  check(): Promise<boolean>;
  close(): Promise<void>;
}

export async function connectTemporal(address: string, namespace: string): Promise<TemporalHandle> {
  const connection = await Connection.connect({ address, connectTimeout: '5s' });
  // traces: workflows started/signalled from here carry the active span's context (only when tracing is on)
  const client = new Client({ connection, namespace, interceptors: await temporalClientInterceptors() });
  return {
    client,
    connection,
    async check() {
      try {
        await connection.workflowService.getSystemInfo({}, );
        return true;
      } catch {
        return false;
      }
    },
    async close() {
      await connection.close();
    },
  };
}

/** gRPC UNAVAILABLE and DEADLINE_EXCEEDED: the Temporal frontend cannot be reached right now (down, restarting). */
const UNREACHABLE_CODES = new Set([14, 4]);

/**
 * True when `err` (or one of its causes) says the Temporal server could not be reached — the client's own retries
 * (about 20 s) ran out while it was down. The api answers those 503 instead of 500 (api/middleware/errors.ts).
 */
export function isTemporalUnreachable(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    if (isGrpcServiceError(e) && UNREACHABLE_CODES.has(e.code)) return true;
  }
  return false;
}
