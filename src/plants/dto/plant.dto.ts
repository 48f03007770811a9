import { ApiSchema } from '@nestjs/swagger';

/** The seed's Plant: what POST /plants answers (no id). */
@ApiSchema({ name: 'Plant' })
export class PlantDto {
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
