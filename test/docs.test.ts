/**
 * The documentation cannot drift from the code: the reference pages in docs/reference are generated (scripts/docs,
 * `npm run docs`) and must match what the code gives now (the CLI's from the very tree `flotta` runs, packages/cli/src/Cli.ts), and every
 * relative link of the README, ARCHITECTURE.md and docs/ leads to a file that exists (and to a heading it has, when
 * it names one).
 */
import { assert, describe, it } from "@effect/vitest"
import * as fs from "node:fs"
import * as path from "node:path"
import { anchors } from "../scripts/docs/markdown.js"
import { pages } from "../scripts/docs/pages.js"
import { ROOT } from "./support/cli.js"

/** The Markdown files people read in the repository (package READMEs link to it by absolute URL). */
const markdownFiles = (): Array<string> => {
  const walk = (dir: string): Array<string> =>
    fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
      entry.isDirectory()
        ? walk(path.join(dir, entry.name))
        : entry.name.endsWith(".md")
        ? [path.join(dir, entry.name)]
        : []
    )
  return [path.join(ROOT, "README.md"), path.join(ROOT, "ARCHITECTURE.md"), ...walk(path.join(ROOT, "docs"))]
}

/** A page's links and images, outside code blocks and code spans. */
export const links = (markdown: string): Array<string> => {
  const prose = markdown.replace(/^(```|~~~)[\s\S]*?^\1/gm, "").replace(/`[^`\n]*`/g, "")
  return [...prose.matchAll(/!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)].map((m) => m[1]!)
}

describe("the docs", () => {
  for (const page of pages()) {
    it(`${page.file} is generated from the code as it is now`, () => {
      const file = path.join(ROOT, page.file)
      const current = fs.existsSync(file) ? fs.readFileSync(file, "utf8") : ""
      assert.isTrue(current === page.content, `${page.file} is stale: run npm run docs`)
    })
  }

  it("every relative link leads to a file that exists, and to a heading it has", () => {
    const files = markdownFiles()
    assert.isAtLeast(files.length, 10)
    const broken: Array<string> = []
    let checked = 0
    for (const file of files) {
      const text = fs.readFileSync(file, "utf8")
      for (const link of links(text)) {
        if (/^[a-z][a-z0-9+.-]*:/i.test(link)) continue
        checked++
        const [target = "", anchor] = link.split("#")
        const resolved = target === "" ? file : path.resolve(path.dirname(file), decodeURIComponent(target))
        const where = `${path.relative(ROOT, file)}: ${link}`
        if (!fs.existsSync(resolved)) broken.push(`${where} (no such file)`)
        else if (anchor !== undefined && resolved.endsWith(".md")) {
          if (!anchors(fs.readFileSync(resolved, "utf8")).has(anchor)) broken.push(`${where} (no such heading)`)
        }
      }
    }
    assert.deepStrictEqual(broken, [])
    assert.isAtLeast(checked, 20)
  })

  it("finds links the way GitHub renders them", () => {
    assert.deepStrictEqual(
      links("[a](x.md) `[b](no.md)` ![c](p.png \"t\")\n```\n[d](no.md)\n```\n[e](https://x.y) [f](#top)"),
      ["x.md", "p.png", "https://x.y", "#top"]
    )
    assert.isTrue(anchors("# Top\n## The `store`, and restarts\n```\n# not\n```\n## Top").has("the-store-and-restarts"))
    assert.isTrue(anchors("# Top\n## Top").has("top-1"))
    assert.isFalse(anchors("```sh\n# not a heading\n```").has("not-a-heading"))
  })
})
