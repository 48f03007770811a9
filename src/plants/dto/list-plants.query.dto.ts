import { ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsInt, IsOptional, IsString, Max, Min } from 'class-validator';
import { CURSOR_PATTERN } from '../plant-cursor.js';

export const DEFAULT_PAGE_SIZE = 20;
export const MAX_PAGE_SIZE = 100;
const LIMIT_MESSAGE = `limit must be an integer from 1 to ${MAX_PAGE_SIZE}`;

export class ListPlantsQueryDto {
  /** Plants per page. */
  @ApiPropertyOptional({
    type: 'integer',
    minimum: 1,
    maximum: MAX_PAGE_SIZE,
    default: DEFAULT_PAGE_SIZE,
  })
  @IsOptional()
  // Query values are text: digits become a number, anything else stays text and fails @IsInt.
  @Transform(({ value }: { value: unknown }) =>
    typeof value === 'string' && /^[0-9]{1,4}$/.test(value) ? Number(value) : value,
  )
  @IsInt({ message: LIMIT_MESSAGE })
  @Min(1, { message: LIMIT_MESSAGE })
  @Max(MAX_PAGE_SIZE, { message: LIMIT_MESSAGE })
  limit?: number;

  /** The `nextCursor` of the previous page. */
  @ApiPropertyOptional({ type: 'string', pattern: CURSOR_PATTERN, example: 'AAAAAAAAAAo' })
  @IsOptional()
  @IsString({ message: 'cursor must be a string' })
  cursor?: string;
}
