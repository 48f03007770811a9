import { ApiProperty, ApiSchema } from '@nestjs/swagger';
import { IsDefined, IsString, Matches, MaxLength, MinLength, ValidateIf } from 'class-validator';
import { ConvertPlain } from '../../common/validation/convert-plain.decorator.js';
import { IsInt64, IsWellFormedText } from '../../common/validation/validators.js';
import { toInt64 } from '../../common/json/int64.js';

export const NAME_MAX = 256;
export const TAG_MAX = 64;

/** The seed's NewPlant: a Plant plus its int64 id. The request body of POST /plants. */
@ApiSchema({ name: 'NewPlant' })
export class NewPlantDto {
  /** Identification number of the plant */
  @ApiProperty({ type: 'integer', format: 'int64', example: 10 })
  @IsInt64()
  @IsDefined({ message: 'id is required' })
  // Converted before validation: an int64 becomes a bigint, anything else is left as it came
  // for @IsInt64 to refuse.
  @ConvertPlain((value) => toInt64(value) ?? value)
  id!: bigint;

  /**
   * Name of the plant
   * @example "Monstera"
   */
  // class-validator checks decorators bottom-up; with stopAtFirstError the first failure wins.
  @MaxLength(NAME_MAX, { message: `name must be at most ${NAME_MAX} characters` })
  @MinLength(1, { message: 'name must be at least 1 character' })
  // eslint-disable-next-line no-control-regex -- NUL is exactly what this refuses
  @Matches(/^[^\u0000]*$/, { message: 'name must not contain NUL characters' })
  @IsWellFormedText()
  @IsString({ message: 'name must be a string' })
  @IsDefined({ message: 'name is required' })
  name!: string;

  /**
   * Tag that specifies the type
   * @example "aroid"
   */
  // Not @IsOptional: that lets null through, and "tag": null is a 400.
  @ValidateIf((plant: NewPlantDto) => plant.tag !== undefined)
  @MaxLength(TAG_MAX, { message: `tag must be at most ${TAG_MAX} characters` })
  // eslint-disable-next-line no-control-regex -- NUL is exactly what this refuses
  @Matches(/^[^\u0000]*$/, { message: 'tag must not contain NUL characters' })
  @IsWellFormedText()
  @IsString({ message: 'tag must be a string' })
  tag?: string;
}
