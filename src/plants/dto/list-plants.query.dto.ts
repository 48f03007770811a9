import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsInt, IsOptional, IsString } from 'class-validator';
import { ConvertPlain } from '../../common/validation/convert-plain.decorator.js';
import { CURSOR_PATTERN } from '../plant-cursor.js';

export const DEFAULT_PAGE_SIZE = 20;
export const MAX_PAGE_SIZE = 100;
const INT32_MIN = -2_147_483_648;
const INT32_MAX = 2_147_483_647;
const LIMIT_MESSAGE = `limit must be an integer from ${INT32_MIN} to ${INT32_MAX}`;

export class ListPlantsQueryDto {
  @ApiPropertyOptional({
    type: 'integer',
    format: 'int32',
    default: DEFAULT_PAGE_SIZE,
    // Any int32, as the upstream Plant Store document allows.
    description:
      `The maximum number of results to return: above ${MAX_PAGE_SIZE} the page holds ` +
      `${MAX_PAGE_SIZE}; 0 or less gives an empty array.`,
  })
  @IsOptional()
  // Query values are text: an int32 in decimal becomes a number; anything else stays text and
  // fails @IsInt. The range is checked here, not with @Min/@Max, which the swagger plugin would
  // write into the document as bounds the upstream's `limit` does not have (a breaking change
  // for oasdiff); `format: int32` already says it.
  @ConvertPlain((value) => parseInt32(value) ?? value)
  @IsInt({ message: LIMIT_MESSAGE })
  limit?: number;

  /** Where the page starts: the `cursor` of the previous page's `Link: <...>; rel="next"`. */
  // No `example`: Swagger UI pre-fills it into "Try it out", which then skips the first plants.
  @ApiPropertyOptional({ type: 'string', pattern: CURSOR_PATTERN })
  @IsOptional()
  @IsString({ message: 'cursor must be a string' })
  cursor?: string;
}

function parseInt32(value: unknown): number | undefined {
  if (typeof value !== 'string' || !/^-?[0-9]{1,10}$/.test(value)) return undefined;
  const number = Number(value);
  return number >= INT32_MIN && number <= INT32_MAX ? number : undefined;
}
