import * as path from "node:path"
import { defineConfig } from "vitest/config"

const pkg = (name: string) => path.join(import.meta.dirname, "packages", name, "src")

// Tests run against the TypeScript sources; users get the compiled output.
export default defineConfig({
  resolve: {
    alias: [
      { find: /^@flotta\/(core|mcp|scheduler|dashboard|cluster|webhooks|cli)$/, replacement: `${pkg("$1")}/index.ts` },
      { find: /^@flotta\/(core|mcp|scheduler|dashboard|cluster|webhooks|cli)\/(.*)$/, replacement: `${pkg("$1")}/$2.ts` }
    ]
  },
  test: {
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: "forks",
    // The JSON report is what .ci/run reads its closing "N passed, N failed" line from.
    reporters: ["default", ["json", { outputFile: "node_modules/.cache/vitest-results.json" }]],
    projects: [
      {
        // The unit ring: the in-memory Claude and TestClock; no child process may start (the setup file
        // makes node:child_process throw).
        extends: true,
        test: { name: "unit", include: ["packages/*/test/**/*.test.ts"], setupFiles: ["test/support/noProcess.ts"] }
      },
      {
        // Integration and end to end: the fake CLI script, the real claude CLI, the flotta command.
        extends: true,
        test: { name: "integration", include: ["test/**/*.test.ts"] }
      }
    ]
  }
})
