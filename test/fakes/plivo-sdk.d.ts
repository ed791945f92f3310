// The plivo npm package ships no types; only the function our tests use.
declare module 'plivo' {
  const plivo: {
    validateV3Signature(method: string, uri: string, nonce: string, authToken: string, signature: string, params?: Record<string, string>): boolean;
  };
  export default plivo;
}
