// The relay server shares the package version through the kit; the file that reads
// package.json stays two folders deep, where the bundles' relative path holds too.
export { APP_VERSION } from '../version.js';
