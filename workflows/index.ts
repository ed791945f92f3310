// Every workflow the worker runs, re-exported for the worker's bundle. One folder per workflow.
export { postCallWorkflow } from './post-call/workflow.ts';
export { transferRecordingWorkflow } from './transfer-recording/workflow.ts';
export { ingestDocument } from './document-ingestion/workflow.ts';
export { campaignWorkflow } from './campaign/workflow.ts';
export { agentTestWorkflow } from './agent-test/workflow.ts';
