// Typed failures of placing a phone call, each with the HTTP status and `detail` the spec gives POST /call.
// Campaigns tell them apart by class and `reason`: GateRefused('concurrency_limit_reached') = the organization's
// slots are full (wait and retry); GateRefused(wallet/quota reasons) = refused by billing; ProviderRejected = the
// carrier refused the dial (row left `dial_failed`); OutboundInvalid = agent / snapshot / credentials problems.
import type { RejectReason } from '../calls/model.ts';
import type { ErrorDetail } from '../http-error.ts';

export class OutboundError extends Error {
  constructor(readonly status: number, readonly detail: ErrorDetail, readonly reason: string) {
    super(typeof detail === 'string' ? detail : JSON.stringify(detail));
    this.name = new.target.name;
  }
}

/**
 * A call-start gate refused: 402/403 wallet or quota, 429 concurrency, 503 no media node with room (nothing was
 * dialled). A rejected row was written (throttled).
 */
export class GateRefused extends OutboundError {
  declare readonly reason: RejectReason;
  get slotFull(): boolean {
    return this.reason === 'concurrency_limit_reached';
  }
  /** No media node had room: the same dial can be tried again in a moment. */
  get mediaFull(): boolean {
    return this.reason === 'media_capacity';
  }
}

export interface ProviderRejectedDetail {
  code: 'provider_rejected';
  provider: string;
  providerStatus: number;
  callId: string;
  message: string;
  [k: string]: unknown;
}

/** The carrier refused or could not take the dial: 400 for carrier 4xx, 502 for 5xx / unreachable. */
export class ProviderRejected extends OutboundError {
  declare readonly detail: ProviderRejectedDetail;
  constructor(detail: ProviderRejectedDetail) {
    super(detail.providerStatus >= 400 && detail.providerStatus < 500 ? 400 : 502, detail, 'dial_failed');
  }
  get callId(): string {
    return this.detail.callId;
  }
}

/** Bad input for a dial: unknown agent, snapshot validation, missing credentials, unknown configuration. */
export class OutboundInvalid extends OutboundError {}
