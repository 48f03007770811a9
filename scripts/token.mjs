// `npm run token`: a new random API token and the `sha256:` entry to put in API_TOKENS.
// Give the token to the client; keep only the sha256 entry in the service's configuration.
// `npm run token -- --webhook`: a new `whsec_` signing secret for WEBHOOK_SECRETS, which the
// service and the receiver both keep.
import { createHash, randomBytes } from 'node:crypto';

const [option] = process.argv.slice(2);

if (option === '--webhook') {
  // 32 random bytes, as Standard Webhooks' own libraries make them.
  console.log(`WEBHOOK_SECRETS entry: whsec_${randomBytes(32).toString('base64')}`);
} else if (option === undefined) {
  const token = randomBytes(32).toString('base64url');
  const digest = createHash('sha256').update(token, 'utf8').digest('hex');
  console.log(`token:            ${token}`);
  console.log(`API_TOKENS entry: sha256:${digest}`);
} else {
  console.error('usage: npm run token             a bearer token and its API_TOKENS entry');
  console.error('       npm run token -- --webhook  a whsec_ secret for WEBHOOK_SECRETS');
  process.exitCode = option === '--help' ? 0 : 64;
}
