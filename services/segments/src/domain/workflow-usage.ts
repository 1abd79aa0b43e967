/**
 * The seam DELETE /segments/{id} asks before deleting: workflows that start on, or wait for, the segment's
 * `segment.<slug>.entry` / `.exit` events would never hear them again. The workflows service answers
 * (workflows-rpc.ts) with the workflows whose trigger or WAIT_FOR_EVENT step names one of the events, once the
 * workflow writes naming them that are under way are done: the DELETE, holding the segment, sees them or they are
 * refused (they look at the segment again, GetSegment by slug with unless_deleting).
 */
export interface WorkflowUsage {
  workflowsWaitingFor(projectId: string, eventNames: string[]): Promise<{ workflowId: string; name: string }[]>;
}
