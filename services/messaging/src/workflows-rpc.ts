import type { Client } from '@connectrpc/connect';
import type { WorkflowsService } from '@svc/proto/svc/workflows/v1/workflows_pb';
import type { TemplateUsagePort } from './domain/templates.js';

/** The workflows service as the templates domain's TemplateUsagePort (FindWorkflowsUsing, settled). */
export function templateUsage(workflows: Client<typeof WorkflowsService>): TemplateUsagePort {
  return {
    async stepsSending(projectId, templateId) {
      const r = await workflows.findWorkflowsUsing({ projectId, templateId, settled: true });
      return r.usages.map((u) => ({ workflowId: u.workflowId, stepId: u.stepId }));
    },
  };
}
