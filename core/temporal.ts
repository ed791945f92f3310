// One Temporal client per process, created at boot.
import { Client, Connection } from '@temporalio/client';
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
