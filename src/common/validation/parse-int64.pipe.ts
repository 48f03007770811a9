import { BadRequestException, Injectable, type PipeTransform } from '@nestjs/common';
import { INT64_RANGE_MESSAGE, parseInt64 } from '../json/int64.js';

/** Path ids as bigint (ParseIntPipe rounds above 2^53); `192.0` is 192, `1.5` is refused. */
@Injectable()
export class ParseInt64Pipe implements PipeTransform<string, bigint> {
  transform(value: string): bigint {
    const id = parseInt64(value.replace(/\.0+$/, ''));
    if (id === undefined) throw new BadRequestException(`id must be ${INT64_RANGE_MESSAGE}`);
    return id;
  }
}
