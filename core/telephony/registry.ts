// The carrier registry: callConfig.provider / telephony configuration provider → adapter.
import { exotel } from './exotel.ts';
import { plivo } from './plivo.ts';
import { smartflo } from './smartflo.ts';
import { telnyx } from './telnyx.ts';
import { vonage } from './vonage.ts';
import { twilio } from './twilio.ts';
import type { CarrierAdapter } from './types.ts';

const ADAPTERS: Record<string, CarrierAdapter> = { twilio, smartflo, plivo, telnyx, vonage, exotel };

/** Carriers with an adapter. Other ids of core/calls/request.ts CARRIERS are accepted by the schema and answer 501. */
export const BUILT_CARRIERS = Object.keys(ADAPTERS);

export function carrierFor(id: string): CarrierAdapter | null {
  return Object.hasOwn(ADAPTERS, id) ? ADAPTERS[id]! : null;
}
