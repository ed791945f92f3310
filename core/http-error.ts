// One error class for every HTTP-facing rejection: a status and the spec's `detail` (string, object or array).
export type ErrorDetail = string | Record<string, unknown> | unknown[];

export class HttpError extends Error {
  readonly status: number;
  readonly detail: ErrorDetail;
  constructor(status: number, detail: ErrorDetail) {
    super(typeof detail === 'string' ? detail : JSON.stringify(detail));
    this.status = status;
    this.detail = detail;
  }
}

export const notFound = (detail: string) => new HttpError(404, detail);
export const badRequest = (detail: ErrorDetail) => new HttpError(400, detail);
