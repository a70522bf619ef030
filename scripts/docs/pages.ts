/**
 * The generated reference pages, as text: `npm run docs` (scripts/docs.ts) writes them, and test/docs.test.ts
 * fails when the files in docs/reference differ from what this gives.
 */
import { flotta } from "@flotta/cli/Cli"
import { cliReference } from "./cli.js"
import { configReference } from "./config.js"
import { mcpToolsReference } from "./mcpTools.js"
import { reportKindsReference } from "./reportKinds.js"

export interface Page {
  /** Relative to the repository's root. */
  readonly file: string
  readonly content: string
}

export const pages = (): ReadonlyArray<Page> => [
  { file: "docs/reference/config.md", content: configReference() },
  { file: "docs/reference/cli.md", content: cliReference(flotta) },
  { file: "docs/reference/mcp-tools.md", content: mcpToolsReference() },
  { file: "docs/reference/report-kinds.md", content: reportKindsReference() }
]
