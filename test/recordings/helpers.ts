// Shared by the recording tests: upload through POST /recordings and read back the stored audio.
import { readWav } from '../../core/audio/wav.ts';
import type { TestServer } from '../helpers/server.ts';
import { multipart } from '../knowledge-base/helpers.ts';

export async function uploadRecording(s: TestServer, key: string, filename: string, data: Buffer, name?: string) {
  const { body, contentType } = multipart([
    { name: 'file', value: data, filename, contentType: 'application/octet-stream' },
    ...(name !== undefined ? [{ name: 'name', value: name }] : []),
  ]);
  const res = await fetch(`${s.baseUrl}/recordings`, { method: 'POST', headers: { 'content-type': contentType, 'x-api-key': key }, body });
  const json = (await res.json()) as { recording_id: string; name: string; duration_seconds: number; format: string };
  if (res.status !== 201) throw new Error(`POST /recordings: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

/** The stored audio (24 kHz mono) of a recording, from its `url`. */
export async function storedRecording(s: TestServer, key: string, id: string): Promise<Int16Array> {
  const got = await s.request('GET', `/recordings/${id}`, { key });
  const res = await fetch(got.body.url as string);
  if (res.status !== 200) throw new Error(`GET ${got.body.url}: ${res.status}`);
  return readWav(new Uint8Array(await res.arrayBuffer())).samples;
}
