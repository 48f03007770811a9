import {
  All,
  Body,
  Controller,
  Delete,
  Get,
  HttpCode,
  Param,
  Post,
  Query,
  Req,
  Res,
} from '@nestjs/common';
import {
  ApiBearerAuth,
  ApiExcludeEndpoint,
  ApiOperation,
  ApiParam,
  ApiResponse,
  ApiTags,
} from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { HttpExceptionWithHeaders } from '../common/errors/http-exception-with-headers.js';
import {
  ApiErrorResponses,
  type ErrorResponseText,
} from '../openapi/api-error-responses.decorator.js';
import { ParseInt64Pipe } from '../common/validation/parse-int64.pipe.js';
import { ListPlantsQueryDto } from './dto/list-plants.query.dto.js';
import { NewPlantDto } from './dto/new-plant.dto.js';
import { PlantRecordDto } from './dto/plant-record.dto.js';
import { PlantDto } from './dto/plant.dto.js';
import type { Plant } from './plant.js';
import { LINK_HEADER_DOC, nextPageLink } from './plant-page-link.js';
import { PlantsService } from './plants.service.js';
import { BEARER_SCHEME } from '../openapi/bearer-scheme.js';

const COMMON_ERRORS = [401, 429, 500, 503];

/** How the plants API words its error responses in the OpenAPI document. */
const PLANT_ERROR_TEXTS: Record<number, ErrorResponseText> = {
  400: { example: 'name must be at most 256 characters' },
  404: { description: 'no such plant', example: 'no plant with id 10' },
  409: {
    description: 'a plant with this id already exists',
    example: 'a plant with id 10 already exists',
  },
};

@ApiTags('plants')
// The upstream document's scheme name: generated clients key their credentials by it.
@ApiBearerAuth(BEARER_SCHEME)
@Controller('plants')
export class PlantsController {
  constructor(private readonly plants: PlantsService) {}

  // The running app serves it through create-plant.route.ts, the same guards, pipe and method.
  @Post()
  @HttpCode(200)
  @ApiOperation({ operationId: 'createPlant', summary: 'Creates a new plant in the store' })
  @ApiResponse({
    status: 200,
    description:
      'the created plant; or, when a plant with this id already exists with the same name and ' +
      'tag, that stored plant (a retry after a timeout or a 503 is safe: nothing is written again)',
    type: PlantDto,
  })
  // The seed labels POST /plants' 400 "unexpected error".
  @ApiErrorResponses([400, 408, 409, 413, 415, ...COMMON_ERRORS], {
    ...PLANT_ERROR_TEXTS,
    400: { ...PLANT_ERROR_TEXTS[400], description: 'unexpected error' },
    409: {
      ...PLANT_ERROR_TEXTS[409],
      description: 'a plant with this id already exists with a different name or tag',
    },
  })
  async create(@Body() body: NewPlantDto): Promise<PlantDto> {
    return toPlantDto(await this.plants.create({ id: body.id, name: body.name, tag: body.tag }));
  }

  @Get()
  @ApiOperation({
    operationId: 'listPlants',
    summary: 'Lists plants ordered by id, a page at a time',
    description:
      'A JSON array of plants ordered by id. When more follow, the `Link` header holds the ' +
      'next page (`rel="next"`); it is absent on the last page.',
  })
  @ApiResponse({
    status: 200,
    description: 'plants ordered by id',
    type: PlantRecordDto,
    isArray: true,
    headers: { Link: LINK_HEADER_DOC },
  })
  @ApiErrorResponses([400, ...COMMON_ERRORS], PLANT_ERROR_TEXTS)
  async list(
    @Query() query: ListPlantsQueryDto,
    @Res({ passthrough: true }) response: Response,
  ): Promise<PlantRecordDto[]> {
    const page = await this.plants.list(query.limit, query.cursor);
    if (page.nextCursor !== null) {
      response.setHeader('Link', nextPageLink(query.limit, page.nextCursor));
    }
    return page.items.map(toPlantRecordDto);
  }

  @Get(':id')
  @ApiOperation({ operationId: 'getPlant', summary: 'Reads one plant' })
  @ApiParam({ name: 'id', schema: { type: 'integer', format: 'int64' } })
  @ApiResponse({ status: 200, description: 'the plant', type: PlantRecordDto })
  @ApiErrorResponses([400, 404, ...COMMON_ERRORS], PLANT_ERROR_TEXTS)
  async get(@Param('id', ParseInt64Pipe) id: bigint): Promise<PlantRecordDto> {
    return toPlantRecordDto(await this.plants.get(id));
  }

  @Delete(':id')
  @HttpCode(204)
  @ApiOperation({ operationId: 'deletePlant', summary: 'Deletes one plant' })
  @ApiParam({ name: 'id', schema: { type: 'integer', format: 'int64' } })
  @ApiResponse({ status: 204, description: 'deleted' })
  @ApiErrorResponses([400, 404, ...COMMON_ERRORS], PLANT_ERROR_TEXTS)
  async delete(@Param('id', ParseInt64Pipe) id: bigint): Promise<void> {
    await this.plants.delete(id);
  }

  // Registered after the real handlers, so only the methods they do not cover end here.
  @All()
  @ApiExcludeEndpoint()
  collectionMethodNotAllowed(@Req() request: Request): never {
    throw methodNotAllowed(request.method, '/plants', ['GET', 'POST']);
  }

  @All(':id')
  @ApiExcludeEndpoint()
  itemMethodNotAllowed(@Req() request: Request): never {
    throw methodNotAllowed(request.method, '/plants/{id}', ['GET', 'DELETE']);
  }
}

/** The Plant shape exactly: no `tag` key when there is none, never null. */
function toPlantDto(plant: Plant): PlantDto {
  return plant.tag === undefined ? { name: plant.name } : { name: plant.name, tag: plant.tag };
}

function toPlantRecordDto(plant: Plant): PlantRecordDto {
  return { id: plant.id, ...toPlantDto(plant) };
}

/** 405 for a method a known path does not offer, with the `Allow` header RFC 9110 asks for. */
function methodNotAllowed(method: string, path: string, allowed: string[]) {
  const allow = allowed.join(', ');
  const message = `${method} is not allowed on ${path}; use ${allow}`;
  return new HttpExceptionWithHeaders(405, message, { Allow: allow });
}
