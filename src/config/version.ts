import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const pkg = require('../../package.json') as { version: string };

/** The package version: the API document's info.version, the agent's User-Agent and hello. */
export const APP_VERSION: string = pkg.version;
