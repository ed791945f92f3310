// One error class for every HTTP-facing rejection: a status and the spec's `detail` (string, object or array).
export type ErrorDetail = string | Record<string, unknown> | unknown[];

export interface HttpErrorOptions {
  /** Sent as `Retry-After` (seconds): the condition clears by itself. */
  retryAfterS?: number;
  /**
   * An expected condition of a healthy service (a node at capacity), not a fault: logged as a warning without a
   * stack even when the status is 5xx.
   */
  expected?: boolean;
}

export class HttpError extends Error {
  readonly status: number;
  readonly detail: ErrorDetail;
  readonly options: HttpErrorOptions;
  constructor(status: number, detail: ErrorDetail, options: HttpErrorOptions = {}) {
    super(typeof detail === 'string' ? detail : JSON.stringify(detail));
    this.status = status;
    this.detail = detail;
    this.options = options;
  }
}

export const notFound = (detail: string) => new HttpError(404, detail);
export const badRequest = (detail: ErrorDetail) => new HttpError(400, detail);
