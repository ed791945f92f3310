// Lint rules. The import restrictions enforce which folders may import which:
//   core/       imports no process folder
//   workflows/  only @temporalio/workflow, pure core/ parts, activity *types*
//   activities/ core/, the engine adapters of media/services/ (post-call analysis and agent tests run the same
//               LLM adapters as calls), and workflow types for the worker bundle path; nothing else of media/
//   api/        never media/ or activities/
//   media/      never api/
import tseslint from 'typescript-eslint';

const proc = (dirs) => dirs.flatMap((d) => [`**/${d}/**`, `../${d}/*`, `../../${d}/*`, `../../../${d}/*`]);

const restrict = (files, forbidden, extraPatterns = [], message) => ({
  files,
  rules: {
    'no-restricted-imports': ['error', {
      patterns: [
        ...forbidden.map((d) => ({ group: proc([d]), message: message ?? `${files[0].split('/')[0]}/ may not import ${d}/ (design.md: who may import whom)` })),
        ...extraPatterns,
      ],
    }],
  },
});

export default tseslint.config(
  { ignores: ['node_modules/**', '.data/**', '.tmp/**', 'eslint.config.js'] },
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-eval': 'error',
      'no-new-func': 'error',
    },
  },
  restrict(['core/**/*.ts'], ['api', 'media', 'activities', 'workflows', 'test', 'bench', 'scripts']),
  restrict(['api/**/*.ts'], ['media', 'activities', 'test', 'bench', 'scripts']),
  restrict(['media/**/*.ts'], ['api', 'activities', 'test', 'bench', 'scripts']),
  restrict(['activities/**/*.ts'], ['api', 'test', 'bench', 'scripts'], [
    { group: [...proc(['media']), '!**/media/services/**', '!../media/services', '!../../media/services'],
      message: 'activities/ may import media/services/ (engine adapters) only, never the session, pipeline or transports (design.md: who may import whom)' },
  ]),
  restrict(['workflows/**/*.ts'], ['api', 'media', 'test', 'bench', 'scripts'], [
    { group: ['pg', 'slonik', 'ws', 'node:*', 'fs', 'http', 'https', 'net', '**/core/db/**', '**/core/storage*', '**/core/webhook*', '@temporalio/client', '@temporalio/worker', '@temporalio/activity'],
      message: 'workflows/ are deterministic: no I/O modules (design.md, Temporal rules)' },
    { group: ['**/activities/**', '../activities/*', '../../activities/*'], allowTypeImports: true,
      message: 'workflows/ may import activity types only (import type ...)' },
  ]),
);
