// The OpenAPI 3.1 document served at GET /api/v1/openapi.json (rendered at /api/v1/docs): document.ts builds it
// from the zod schemas of the contract; each module beside it adds the path items of one area.
import './agent-tests.ts';
import './calls.ts';
import './campaigns.ts';
import './carriers.ts';
import './console.ts';
import './credentials.ts';
import './paths.ts';
import './recordings.ts';
import './telephony.ts';

export { openApiDocument, openApiRoutes, registerOpenApiPaths } from './document.ts';
