import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['node_modules/**', '.bench-build/**', 'client/python/**', 'docs/**', 'dist/**', '**/*.generated.*', 'envs/**/assets/**'] },
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
);
