import { ApiProperty, ApiSchema } from '@nestjs/swagger';
import { PlantRecordDto } from './plant-record.dto.js';

/** One page of plants, ordered by id. */
@ApiSchema({ name: 'PlantPage' })
export class PlantPageDto {
  items!: PlantRecordDto[];

  /** Pass as `cursor` to get the next page; null on the last page. */
  @ApiProperty({ type: 'string', nullable: true, example: null })
  nextCursor!: string | null;
}
