/** A plant as the store keeps it. */
export interface Plant {
  id: bigint;
  name: string;
  tag: string | undefined;
}

export type InsertOutcome = 'created' | 'duplicate';
