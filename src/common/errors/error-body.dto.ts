import { ApiProperty, ApiSchema } from '@nestjs/swagger';

/** The seed's Error object: every non-2xx answer of the API has this body. */
@ApiSchema({ name: 'Error' })
export class ErrorBodyDto {
  /** The HTTP status of the answer. */
  @ApiProperty({ type: 'integer', format: 'int32', example: 400 })
  error!: number;

  /** What went wrong and what to fix, naming the field and the rule. */
  @ApiProperty({ example: 'name must be at most 256 characters' })
  message!: string;
}
