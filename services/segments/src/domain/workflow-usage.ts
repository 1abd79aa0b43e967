/**
 * The seam DELETE /segments/{id} asks before deleting: workflows that start on, or wait for, the segment's
 * `segment.<slug>.entry` / `.exit` events would never hear them again. The workflows service answers
 * (workflows-rpc.ts) with the workflows whose trigger or WAIT_FOR_EVENT step names one of the events.
 */
export interface WorkflowUsage {
  workflowsWaitingFor(projectId: string, eventNames: string[]): Promise<{ workflowId: string; name: string }[]>;
}
