export interface SegmentRow {
  id: string;
  project_id: string;
  name: string;
  description: string | null;
  type: 'DYNAMIC' | 'STATIC';
  condition: unknown | null;
  track_membership: boolean;
  slug: string;
  member_count: string;
  created_at: Date;
  updated_at: Date;
}
