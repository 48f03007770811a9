import { ConflictException, Injectable, NotFoundException } from '@nestjs/common';
import { InjectMetric } from '@willsoto/nestjs-prometheus';
import type { Counter } from 'prom-client';
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from './dto/list-plants.query.dto.js';
import type { Plant } from './plant.js';
import { decodeCursor, encodeCursor } from './plant-cursor.js';
import { PlantsRepository } from './plants.repository.js';

export interface PlantPage {
  items: Plant[];
  nextCursor: string | null;
}

/** The plant rules: ids are unique, pages are ordered by id and resumable by cursor. */
@Injectable()
export class PlantsService {
  constructor(
    private readonly repository: PlantsRepository,
    @InjectMetric('plants_created_total') private readonly created: Counter,
  ) {}

  /** A retry of a POST that committed gets the stored plant if the body is the same, else 409. */
  async create(plant: Plant): Promise<Plant> {
    const outcome = await this.repository.insert(plant);
    if (outcome === 'created') {
      this.created.inc();
      return plant;
    }
    const stored = await this.repository.findById(plant.id);
    if (stored && stored.name === plant.name && stored.tag === plant.tag) return stored;
    throw new ConflictException(`a plant with id ${plant.id} already exists`);
  }

  async get(id: bigint): Promise<Plant> {
    const plant = await this.repository.findById(id);
    if (!plant) throw new NotFoundException(`no plant with id ${id}`);
    return plant;
  }

  /** Any int32 `limit`, as upstream: at most MAX_PAGE_SIZE, and 0 or less is an empty page. */
  async list(limit = DEFAULT_PAGE_SIZE, cursor?: string): Promise<PlantPage> {
    const after = cursor === undefined ? undefined : decodeCursor(cursor);
    const size = Math.min(limit, MAX_PAGE_SIZE);
    if (size <= 0) return { items: [], nextCursor: null };
    // One extra row tells whether another page exists without a count query.
    const rows = await this.repository.list(size + 1, after);
    const items = rows.slice(0, size);
    const last = items.at(-1);
    return { items, nextCursor: rows.length > size && last ? encodeCursor(last.id) : null };
  }

  async delete(id: bigint): Promise<void> {
    if (!(await this.repository.delete(id))) throw new NotFoundException(`no plant with id ${id}`);
  }
}
