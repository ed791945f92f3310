// Messages of the document-ingestion workflow (`ingestDocument-<documentUuid>`), started by the api.
export interface IngestDocumentInput {
  documentId: string;
}
export const INGEST_DOCUMENT_WORKFLOW_TYPE = 'ingestDocument';
export const ingestDocumentWorkflowId = (documentId: string) => `ingestDocument-${documentId}`;
