import type { Client } from '@connectrpc/connect';
import type { WorkflowsService } from '@svc/proto/svc/workflows/v1/workflows_pb';
import type { WorkflowUsage } from './domain/workflow-usage.js';

/**
 * The workflows service as the segments domain's WorkflowUsage: workflows on a segment's entry or exit events, read
 * once the workflow writes naming them that are under way are done (`settled`; a DELETE asks, holding the segment).
 */
export function workflowUsage(workflows: Client<typeof WorkflowsService>): WorkflowUsage {
  return {
    async workflowsWaitingFor(projectId, eventNames) {
      const answers = await Promise.all(
        eventNames.map((eventName) => workflows.findWorkflowsUsing({ projectId, eventName, settled: true })),
      );
      const found = new Map<string, string>();
      for (const u of answers.flatMap((a) => a.usages)) found.set(u.workflowId, u.workflowName);
      return [...found].map(([workflowId, name]) => ({ workflowId, name }));
    },
  };
}
