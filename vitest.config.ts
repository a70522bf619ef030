import * as path from "node:path"
import { defineConfig } from "vitest/config"

const pkg = (name: string) => path.join(import.meta.dirname, "packages", name, "src")

// Tests run against the TypeScript sources; users get the compiled output.
export default defineConfig({
  resolve: {
    alias: [
      { find: /^@flotta\/(core|mcp|scheduler|cli)$/, replacement: `${pkg("$1")}/index.ts` },
      { find: /^@flotta\/(core|mcp|scheduler|cli)\/(.*)$/, replacement: `${pkg("$1")}/$2.ts` }
    ]
  },
  test: {
    include: ["packages/*/test/**/*.test.ts", "test/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: "forks",
    // The JSON report is what .ci/run reads its closing "N passed, N failed" line from.
    reporters: ["default", ["json", { outputFile: "node_modules/.cache/vitest-results.json" }]]
  }
})
