/**
 * `npm run docs`: writes the reference pages generated from the code (docs/reference/*.md). Run it after changing
 * a config Schema, a command or an MCP tool; test/docs.test.ts fails while a page is stale.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { pages } from "./docs/pages.js"

const root = path.join(import.meta.dirname, "..")
for (const page of pages()) {
  const file = path.join(root, page.file)
  fs.mkdirSync(path.dirname(file), { recursive: true })
  const before = fs.existsSync(file) ? fs.readFileSync(file, "utf8") : undefined
  if (before !== page.content) fs.writeFileSync(file, page.content)
  process.stdout.write(`${page.file}: ${before === page.content ? "up to date" : "written"}\n`)
}
