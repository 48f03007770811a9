// `npm run token`: a new random API token and the `sha256:` entry to put in API_TOKENS.
// Give the token to the client; keep only the sha256 entry in the service's configuration.
import { createHash, randomBytes } from 'node:crypto';

const token = randomBytes(32).toString('base64url');
const digest = createHash('sha256').update(token, 'utf8').digest('hex');

console.log(`token:            ${token}`);
console.log(`API_TOKENS entry: sha256:${digest}`);
