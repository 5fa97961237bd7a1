// Typed lint: the rule that matters most here is no floating promises.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import { layersConfig } from './eslint-layers.mjs';

export default tseslint.config(
  { ignores: ['dist/', '.test-build-*/', 'node_modules/', 'tailgate-demo/', '**/*.mjs', 'eslint.config.js'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { parserOptions: { project: './tsconfig.lint.json', tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': [
        'error',
        { allowForKnownSafeCalls: [{ from: 'package', package: 'node:test', name: ['test', 'it', 'describe', 'suite'] }] },
      ],
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: false }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  layersConfig,
);
