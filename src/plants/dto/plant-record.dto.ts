import { ApiProperty, ApiSchema } from '@nestjs/swagger';

/** A stored plant with its id, as GET /plants and GET /plants/{id} show it. */
@ApiSchema({ name: 'PlantRecord' })
export class PlantRecordDto {
  /** Identification number of the plant */
  @ApiProperty({ type: 'integer', format: 'int64', example: 10 })
  id!: bigint;

  /**
   * Name of the plant
   * @example "Monstera"
   */
  name!: string;

  /**
   * Tag that specifies the type
   * @example "aroid"
   */
  tag?: string;
}
