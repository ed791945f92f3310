// The carriers' own SDK functions (devDependencies), so that our fakes sign callbacks exactly the way the carriers'
// published code computes or checks them, and a misreading cannot be shared by our verifier and our fake:
//   twilio      getExpectedTwilioSignature (signing) / validateRequest (checking)
//   plivo       validateV3Signature (checking; the SDK publishes no signer: the fake's signature must pass it)
//   telnyx      client.webhooks.unwrap (checking Ed25519 over "timestamp|body" with the portal public key)
//   @vonage/jwt verifySignature (checking the signed-callback JWT; HS256 with the signature secret)
import { verifySignature } from '@vonage/jwt';
import plivo from 'plivo';
import Telnyx from 'telnyx';
import twilio from 'twilio';

/** Twilio's X-Twilio-Signature of a form POST, computed by the twilio SDK. */
export function sdkTwilioSignature(token: string, url: string, params: Record<string, string>): string {
  return twilio.getExpectedTwilioSignature(token, url, params);
}

export function sdkTwilioAccepts(token: string, signature: string, url: string, params: Record<string, string>): boolean {
  return twilio.validateRequest(token, signature, url, params);
}

/** plivo SDK's validateV3Signature (GET: the URL's query; POST: the form fields). */
export function sdkPlivoAccepts(method: 'GET' | 'POST', url: string, nonce: string, token: string, signature: string, params: Record<string, string>): boolean {
  return plivo.validateV3Signature(method, url, nonce, token, signature, params) as boolean;
}

/** telnyx SDK's webhook check with the account's base64 public key. */
export async function sdkTelnyxAccepts(publicKey: string, body: string, headers: Record<string, string>): Promise<boolean> {
  try {
    await new Telnyx({ apiKey: 'unused', publicKey }).webhooks.unwrap(body, { headers });
    return true;
  } catch {
    return false;
  }
}

/** @vonage/jwt's check of a signed callback's bearer JWT with the account's signature secret. */
export function sdkVonageAccepts(jwt: string, signatureSecret: string): boolean {
  return verifySignature(jwt, signatureSecret);
}

/** Throw when an SDK refuses what a fake is about to send as genuine: the fake would test nothing real. */
export function sdkMustAccept(ok: boolean, what: string): void {
  if (!ok) throw new Error(`the carrier SDK refuses the fake's ${what}: the fake signs differently from the carrier`);
}
