import { filterTreeFields } from '@svc/lib/filter-tree';
import { isUuid } from '@svc/lib/ids';
import type { WorkflowsStore } from '../store/workflows-store.js';

export interface WorkflowUsage {
  workflowId: string;
  workflowName: string;
  stepId: string;
  stepName: string;
  stepType: string;
}

/** A filter on `field` references it; below a data field (`data.plan.tier` under `data.plan`) too. */
export const referencesField = (filterField: string, field: string) =>
  filterField === field || (field.startsWith('data.') && filterField.startsWith(`${field}.`));

/** Which workflow steps reference a template, an event name or a contact field (the usage endpoints). */
export async function findWorkflowsUsing(
  store: WorkflowsStore,
  projectId: string,
  ref: { field?: string; eventName?: string; templateId?: string },
): Promise<WorkflowUsage[]> {
  if (!isUuid(projectId)) return [];
  if (ref.templateId !== undefined && !isUuid(ref.templateId)) return [];
  const rows = await store.referencingSteps(projectId, {
    templateId: ref.templateId,
    eventName: ref.eventName,
    conditions: ref.field !== undefined,
  });
  return rows
    .filter(
      (s) =>
        s.type !== 'CONDITION' || filterTreeFields(s.config.condition).some((f) => referencesField(f, ref.field ?? '')),
    )
    .map((s) => ({
      workflowId: s.workflow_id,
      workflowName: s.workflow_name,
      stepId: s.id,
      stepName: s.name,
      stepType: s.type,
    }));
}
