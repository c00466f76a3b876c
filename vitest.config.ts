import { configDefaults, defineConfig } from 'vitest/config';

const realServices = ['test/integration/**', 'test/e2e/**'];

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 60_000,
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          include: ['test/**/*.test.ts'],
          exclude: [...configDefaults.exclude, ...realServices],
        },
      },
      {
        // Starts DynamoDB Local + fauxqs once per run, only when this project has tests to run.
        extends: true,
        test: {
          name: 'integration',
          include: realServices.map((dir) => `${dir}/*.test.ts`),
          globalSetup: ['test/global-setup.ts'],
        },
      },
    ],
  },
});
