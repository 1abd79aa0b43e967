export interface ContactRow {
  id: string;
  project_id: string;
  email: string;
  subscribed: boolean;
  snoozed_until: Date | null;
  data: Record<string, unknown>;
  created_at: Date;
  updated_at: Date;
}

export interface EventRow {
  id: string;
  project_id: string;
  contact_id: string;
  name: string;
  data: Record<string, unknown>;
  created_at: Date;
  contact_email?: string;
}
