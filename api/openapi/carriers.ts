// OpenAPI path items of the carrier webhooks (api/routes/telephony/webhooks.ts): every carrier but Smartflo, which
// has none.
import { registerOpenApiPaths } from './document.ts';
import { err, str } from './parts.ts';

const carrier = { name: 'carrier', in: 'path', required: true, schema: { enum: ['twilio', 'plivo', 'telnyx', 'vonage', 'exotel'] } };
const callId = { name: 'callId', in: 'path', required: true, schema: { type: 'string', format: 'uuid' } };
const signed = 'Verified with the carrier\'s signature (Twilio X-Twilio-Signature, Plivo X-Plivo-Signature-V3 + nonce, Telnyx telnyx-signature-ed25519 + telnyx-timestamp, Vonage signed-callback JWT with payload_hash) or, for Exotel, our signed `token` / `config`+`sig` query parameters.';
const body = {
  required: false,
  content: {
    'application/x-www-form-urlencoded': { schema: { type: 'object', additionalProperties: str } },
    'application/json': { schema: { type: 'object' } },
  },
};
const item = (summary: string, params: object[]) => {
  const op = {
    tags: ['Carrier webhooks'], summary, description: signed, security: [], parameters: params, requestBody: body,
    responses: {
      200: { description: 'The carrier\'s answer document (Twilio TwiML, Plivo XML, Vonage NCCO, Exotel {url}) or an acknowledgement' },
      204: { description: 'Accepted' },
      403: err('Missing or invalid signature (nothing changes)'), 404: err('Unknown call'),
    },
  };
  return { post: op, get: { ...op, requestBody: undefined } };
};

registerOpenApiPaths({
  '/telephony/{carrier}/answer/{callId}': item('Answer webhook of an outbound call → the bridge to our media stream', [carrier, callId]),
  '/telephony/{carrier}/status/{callId}': item('Status / event callback of an outbound call', [carrier, callId]),
  '/telephony/{carrier}/amd/{callId}': item('Answering-machine detection result', [carrier, callId]),
  '/telephony/{carrier}/transfer/{callId}': item('Document of a transferred leg (Plivo aleg_url → <Dial>)', [carrier, callId]),
  '/telephony/{carrier}/recording/{callId}': item('Recording of a transferred leg (Twilio recordingStatusCallback, Plivo <Record> callbackUrl, Telnyx call.recording.saved, Vonage record eventUrl) → transfer-recording workflow', [carrier, callId]),
  '/telephony/{carrier}/voice': item("A number's inbound webhook (Twilio VoiceUrl, answer URL / Call Control events / Exotel Voicebot URL)", [carrier]),
  '/telephony/{carrier}/voice-status': item("A number's status webhook", [carrier]),
});
