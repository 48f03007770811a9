import { ApiProperty, ApiSchema } from '@nestjs/swagger';
import { PlantDto } from './plant.dto.js';

/** A stored plant with its id, as GET /plants and GET /plants/{id} show it. */
@ApiSchema({ name: 'PlantRecord' })
export class PlantRecordDto extends PlantDto {
  /** Identification number of the plant */
  @ApiProperty({ type: 'integer', format: 'int64', example: 10 })
  id!: bigint;
}
