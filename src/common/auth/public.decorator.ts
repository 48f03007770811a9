import { SetMetadata } from '@nestjs/common';

export const IS_PUBLIC = 'isPublic';

/** Opens a route to callers without a token. Everything else is protected by default. */
export const Public = () => SetMetadata(IS_PUBLIC, true);
