// ESLint with typescript-eslint's type-checked rules over the library, its tests, the benchmark and the viewer.
//
// typescript-eslint reads types through TypeScript's JavaScript API, which TypeScript 7 no longer ships: so
// `typescript` in package.json is Microsoft's TypeScript 6 API package (@typescript/typescript6) for the linter,
// and the build's compiler is TypeScript 7, installed as @typescript/native-compiler. Both install a `tsc`
// (typescript6's own TypeScript 6 as @typescript/old): `npm run build` calls TypeScript 7 by its path, so
// which of the two npm links as `tsc` never decides what compiles simrec.
import js from '@eslint/js';
import { defineConfig } from 'eslint/config';
import tseslint from 'typescript-eslint';

export default defineConfig(
  // vite.config.ts is the bundler's settings, in no tsconfig: nothing there for type-checked rules to check.
  { ignores: ['dist/', 'node_modules/', 'bench/results/', 'test-artifacts/', 'vite.config.ts'] },

  // A disable comment that no longer disables anything is stale: it fails the lint like a finding.
  { linterOptions: { reportUnusedDisableDirectives: 'error' } },

  {
    files: ['src/**/*.ts', 'test/**/*.ts', 'bench/**/*.ts', 'web/src/**/*.ts'],
    extends: [js.configs.recommended, tseslint.configs.recommendedTypeChecked],
    languageOptions: {
      // Each file is checked under its nearest tsconfig: tsconfig.json for src, test and bench,
      // web/tsconfig.json for the viewer.
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      // A promise nobody awaits loses its rejection: every fire-and-forget is said in code
      // (`void` with the reason nothing waits, or a `.catch` that reports).
      '@typescript-eslint/no-floating-promises': [
        'error',
        // node:test runs the tests it is handed; their promises are its business, not the file's.
        {
          allowForKnownSafeCalls: [
            { from: 'package', package: 'node:test', name: ['describe', 'it', 'test'] },
          ],
        },
      ],
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/await-thenable': 'error',
      // A leading underscore names what is left out on purpose: `const { id: _id, ...rest } = row`.
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', ignoreRestSiblings: true },
      ],
      // Noise here: methods of the async ports are `async` without an await so that a throw becomes a rejection.
      '@typescript-eslint/require-await': 'off',
      // Noise here: String(value) on JSON metadata that is a scalar by contract; exports depend on its text.
      '@typescript-eslint/no-base-to-string': 'off',
      // An array in a message reads as its items joined with commas, which is what the messages mean.
      '@typescript-eslint/restrict-template-expressions': ['error', { allowArray: true }],
    },
  },

  {
    files: ['test/**/*.ts'],
    rules: {
      // Noise in tests: they read JSON answers and drive the browser, where window and document are `any`
      // (the Node tsconfig has no DOM types); the assertions on those values are the check.
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      // Noise in tests: an assertion's message prints the value under test as it comes, whatever its type.
      '@typescript-eslint/restrict-template-expressions': 'off',
    },
  },
);
