// Stored recordings on a carrier stream (Twilio Media Streams, 8 kHz µ-law): the recording plays through the same
// pacer as speech and the transport converts it; the caller hears it (found by correlation at 8 kHz) before the
// stream closes (endCall) or before the carrier is asked to move the call (a saved transferCall's audio message).
import test from 'ava';
import { resample } from '../../core/audio/resample.ts';
import { endedRow } from '../helpers/calls.ts';
import { agentQuiet, dialTwilio, openStream, phoneAgent, twilioLine } from '../telephony/media-helpers.ts';
import { chirp, findIn, opusFile, wavFile } from './audio-files.ts';
import { storedRecording, uploadRecording } from './helpers.ts';
import { until } from '../helpers/wait.ts';

const line = twilioLine(test, 'recordings-phone', '+15550001111', '+15557654321', { balanceUsd: 50, concurrency: 10 });

const agent = (name: string, tools: unknown[]) => phoneAgent({ name, tools });

async function dialAndAnswer(agentSel: { agent: Record<string, unknown> } | { agentId: string }) {
  const { callId, call, stream } = await dialTwilio(line, agentSel);
  const media = openStream(line.rig, call, stream);
  await media.opened;
  await until(() => media.heardMs > 300, { what: 'greeting', timeoutMs: 20_000 });
  await agentQuiet(media);
  return { callId, call, media };
}

/** The stored recording as the caller can hear it at best: 8 kHz (the phone band). */
async function at8k(id: string): Promise<Int16Array> {
  return resample(await storedRecording(line.rig.s, line.org.apiKey, id), 24_000, 8_000);
}

test.serial('a saved agent whose endCall recording was archived since: the phone call plays it over the µ-law stream before the stream closes; transcript; agent_hangup', async (t) => {
  const rec = await uploadRecording(line.rig.s, line.org.apiKey, 'bye.wav', wavFile(chirp(1.2, 16_000), 16_000), 'Phone goodbye');
  const name = line.rig.scenarios.add({ stt: { utterances: ['bye now'] }, llm: [{ toolCalls: [{ name: 'end_call' }] }] });
  const saved = await line.rig.s.request('POST', '/agents', { key: line.org.apiKey, body: agent(name, [{ type: 'endCall', name: 'end_call', config: { messageType: 'audio', audioRecordingId: rec.recording_id } }]) });
  t.is(saved.status, 201, JSON.stringify(saved.body));
  t.is((await line.rig.s.request('DELETE', `/recordings/${rec.recording_id}`, { key: line.org.apiKey })).status, 200);
  const { callId, media } = await dialAndAnswer({ agentId: saved.body.uuid });
  const before = media.heardBytes;
  await media.tone(500);
  await media.silence(500);
  const { code } = await media.closed;
  t.is(code, 1000);
  const heard = media.heardPcm();
  const found = findIn(heard, await at8k(rec.recording_id));
  t.true(found.score > 0.9, `the caller heard the recording before the stream closed (correlation ${found.score.toFixed(3)})`);
  t.true(found.lag >= before, 'after the greeting');
  const row = await endedRow(line.rig.s.db, callId);
  t.is(row.ended_reason, 'agent_hangup');
  const assistant = (row.transcript as Array<{ role: string; content?: string }>).filter((e) => e.role === 'assistant');
  t.is(assistant.at(-1)?.content, '[audio: Phone goodbye]');
});

test.serial('a saved transferCall with an audio message: the caller hears the recording, then the carrier moves the call', async (t) => {
  const rec = await uploadRecording(line.rig.s, line.org.apiKey, 'hold.ogg', await opusFile(chirp(1, 48_000, 400, 3200), 'ogg'), 'Connecting');
  const tool = await line.rig.s.request('POST', '/tools', {
    key: line.org.apiKey,
    body: { name: 'to sales', definition: { type: 'transferCall', config: { destination: '+15550009999', messageType: 'audio', audioRecordingId: rec.recording_id, timeout: 20 } } },
  });
  t.is(tool.status, 200, JSON.stringify(tool.body));
  const name = line.rig.scenarios.add({ stt: { utterances: ['put me through to sales'] }, llm: [{ toolCalls: [{ name: 'to_sales' }] }] });
  const { callId, call, media } = await dialAndAnswer({ agent: agent(name, [tool.body.tool_uuid]) });
  await media.tone(600);
  await media.silence(500);
  await until(() => call.updates[0], { what: 'call update', timeoutMs: 20_000 });
  const heardBeforeUpdate = media.heardPcm();
  // The message is done (and the carrier asked to move the call) once its last frame's playout time has passed on
  // our clock, as for a spoken message; what the carrier still held in its buffer then (the pacer's lead, ≤ 100 ms,
  // plus the network) is cut by the move. So the recording's last 150 ms are not asked for.
  const recording = await at8k(rec.recording_id);
  const found = findIn(heardBeforeUpdate, recording.subarray(0, recording.length - 1_200));
  t.true(found.score > 0.9, `the recording played before the transfer (correlation ${found.score.toFixed(3)})`);
  const row = await endedRow(line.rig.s.db, callId);
  t.is(row.ended_reason, 'transferred');
  t.true((row.transcript as Array<{ role: string; content?: string }>).some((e) => e.role === 'assistant' && e.content === '[audio: Connecting]'));
});
