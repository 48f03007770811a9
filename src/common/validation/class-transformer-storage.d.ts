/**
 * class-transformer keeps its decorators' metadata in this module; the package exports no
 * path to it, but its typings describe it (compiled-validator.ts reads the @Transform functions).
 */
declare module 'class-transformer/cjs/storage.js' {
  import type { MetadataStorage } from 'class-transformer/types/MetadataStorage.js';
  export const defaultMetadataStorage: MetadataStorage;
}
