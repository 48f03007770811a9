import { BadRequestException, Injectable, type PipeTransform } from '@nestjs/common';
import { INT64_RANGE_MESSAGE, parseInt64 } from '../json/int64.js';

/**
 * Path ids as bigint: decimal digits, in the int64 range. Nest's ParseIntPipe would round ids
 * above 2^53. `192.0` is the integer 192 (as JSON Schema's `integer` says); `1.5` is refused.
 */
@Injectable()
export class ParseInt64Pipe implements PipeTransform<string, bigint> {
  transform(value: string): bigint {
    const id = parseInt64(value.replace(/\.0+$/, ''));
    if (id === undefined) throw new BadRequestException(`id must be ${INT64_RANGE_MESSAGE}`);
    return id;
  }
}
