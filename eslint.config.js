import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: [
      'node_modules/**',
      '.bench-build/**',
      'client/python/**',
      'docs/**',
      'dist/**',
      '**/*.generated.*',
      'envs/**/assets/**',
      '.device-carry/**',
      '.docs-run/**',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      globals: { process: 'readonly', console: 'readonly', Buffer: 'readonly', URL: 'readonly', setTimeout: 'readonly', clearTimeout: 'readonly' },
    },
  },
  {
    rules: {
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-console': 'off',
    },
  },
  {
    // Library code logs through injected pino loggers, never the console.
    files: ['protocol/**/*.ts', 'envs/**/*.ts', 'server/**/*.ts', 'client/ts/**/*.ts'],
    rules: { 'no-console': 'error' },
  },
  // Imports point one way (docs/DESIGN): protocol imports nothing of ours; runtime imports protocol;
  // envs import protocol and runtime (envs/hosted too: the Python worker pool and plugins are envs
  // served by other processes, and know nothing of the server); server adds envs; the TypeScript
  // client imports protocol and runtime only. bin/ and conformance/ may import both sides.
  ...[
    ['protocol', ['runtime', 'envs', 'server', 'client', 'bin', 'conformance']],
    ['runtime', ['envs', 'server', 'client', 'bin', 'conformance']],
    ['envs', ['server', 'client', 'bin', 'conformance']],
    ['server', ['client', 'bin', 'conformance']],
    ['client/ts', ['envs', 'server', 'bin', 'conformance']],
  ].map(([room, forbidden]) => ({
    files: [`${room}/**/*.ts`],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: forbidden.map((other) => ({
            group: [`**/${other}/**`],
            message: `${room}/ may not import ${other}/: imports point one way (docs/DESIGN.md).`,
          })),
        },
      ],
    },
  })),
);
