/**
 * ARCHITECTURE.md is the map: every src module (`packages/<package>/src/**\/*.ts`) has exactly one row, and every
 * row names a module that exists. A row is a line of a table headed `| package | module | what it owns |`:
 * `| core | \`internal/sqlStore\` | what it owns |` names packages/core/src/internal/sqlStore.ts. And no module is
 * over 400 lines: one concept each. Its list of errors names every `Schema.TaggedError`, and its table of layers
 * every `layer*` a public module exports.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "vitest"

const ROOT = path.join(import.meta.dirname, "..")
const HEADER = /^\|\s*package\s*\|\s*module\s*\|\s*what it owns\s*\|\s*$/
const ROW = /^\|\s*([^|]*?)\s*\|\s*([^|]*?)\s*\|\s*(.*?)\s*\|\s*$/

interface Row {
  readonly line: number
  readonly file: string
}

/** The rows of every map table, each as the file it names (relative to the root). */
const rows = (markdown: string): { readonly rows: ReadonlyArray<Row>; readonly malformed: ReadonlyArray<string> } => {
  const found: Array<Row> = []
  const malformed: Array<string> = []
  let inTable = false
  markdown.split("\n").forEach((text, index) => {
    const line = index + 1
    if (HEADER.test(text)) {
      inTable = true
      return
    }
    if (!inTable) return
    if (!text.startsWith("|")) {
      inTable = false
      return
    }
    if (/^\|[\s|:-]+\|$/.test(text)) return // the separator under the header
    const cells = ROW.exec(text)
    const module = cells && /^`([A-Za-z0-9_/-]+)`$/.exec(cells[2]!)
    if (!cells || !module || !/^[a-z]+$/.test(cells[1]!) || cells[3]!.length === 0) {
      malformed.push(`line ${line}: ${text}`)
      return
    }
    found.push({ line, file: `packages/${cells[1]}/src/${module[1]}.ts` })
  })
  return { rows: found, malformed }
}

/** Every src module, relative to the root. */
const modules = (): ReadonlyArray<string> =>
  fs.readdirSync(path.join(ROOT, "packages")).flatMap((pkg) => {
    const src = path.join(ROOT, "packages", pkg, "src")
    if (!fs.existsSync(src)) return []
    return fs.readdirSync(src, { recursive: true, encoding: "utf8" })
      .filter((file) => file.endsWith(".ts") && !file.endsWith(".d.ts"))
      .map((file) => `packages/${pkg}/src/${file.split(path.sep).join("/")}`)
  }).sort()

describe("ARCHITECTURE.md", () => {
  const map = rows(fs.readFileSync(path.join(ROOT, "ARCHITECTURE.md"), "utf8"))

  it("has map rows, each naming one module in backticks and saying what it owns", () => {
    expect(map.rows.length).toBeGreaterThan(0)
    expect(map.malformed, "map rows that are not `| package | `module` | what it owns |`").toEqual([])
  })

  it("has a row for every src module", () => {
    const named = new Set(map.rows.map((row) => row.file))
    expect(modules().filter((file) => !named.has(file)), "src modules with no row in ARCHITECTURE.md").toEqual([])
  })

  it("names only modules that exist, each once", () => {
    const absent = map.rows.filter((row) => !fs.existsSync(path.join(ROOT, row.file)))
    expect(absent.map((row) => `line ${row.line}: ${row.file}`), "rows naming a module that does not exist").toEqual([])
    const seen = new Map<string, number>()
    const twice = map.rows.flatMap((row) => {
      const first = seen.get(row.file)
      seen.set(row.file, first ?? row.line)
      return first === undefined ? [] : [`${row.file} on lines ${first} and ${row.line}`]
    })
    expect(twice, "modules with two rows").toEqual([])
  })

  it("maps modules of one concept each: none over 400 lines (a longer one is two concepts, split by concept)", () => {
    const long = modules().flatMap((file) => {
      const lines = fs.readFileSync(path.join(ROOT, file), "utf8").split("\n").length - 1
      return lines > 400 ? [`${file}: ${lines} lines`] : []
    })
    expect(long, "src modules over 400 lines").toEqual([])
  })

  const sources = () => modules().map((file) => ({ file, text: fs.readFileSync(path.join(ROOT, file), "utf8") }))
  const text = fs.readFileSync(path.join(ROOT, "ARCHITECTURE.md"), "utf8")

  it("names every Schema.TaggedError of every package in its list of errors", () => {
    const errors = sources().flatMap(({ file, text: source }) =>
      [...source.matchAll(/class (\w+) extends Schema\.TaggedError</g)].map((m) => ({ file, name: m[1]! }))
    )
    expect(errors.length).toBeGreaterThan(40)
    const section = text.slice(text.indexOf("Failures are typed"), text.indexOf("Status values:"))
    expect(
      errors.filter((e) => !section.includes(`\`${e.name}\``)).map((e) => `${e.name} (${e.file})`),
      "errors ARCHITECTURE.md does not name"
    ).toEqual([])
  })

  it("names every layer a public module exports in its table of layers", () => {
    const layers = sources().filter(({ file }) => !file.includes("/internal/")).flatMap(({ file, text: source }) => {
      const module = path.basename(file, ".ts")
      const exported = [...source.matchAll(/^export (?:const|function) (layer\w*)\b/gm)].map((m) => `${module}.${m[1]}`)
      // A static layer is named by its class: `ClaudeCli.layerCommand`, `Store.memory`.
      const statics = [...source.matchAll(/^  static (?:readonly )?(layer\w*|memory|live|none|pendingDecisions)\b/gm)]
        .map((m) => {
          const before = source.slice(0, m.index)
          const owner = [...before.matchAll(/^export class (\w+)/gm)].at(-1)?.[1] ?? module
          return `${owner}.${m[1]}`
        })
      return [...new Set([...exported, ...statics])].map((name) => ({ file, name }))
    })
    expect(layers.length).toBeGreaterThan(20)
    const start = text.indexOf("## Layers")
    const section = text.slice(start, text.indexOf("\n## ", start + 1))
    expect(
      layers.filter((l) => !section.includes(`\`${l.name}`)).map((l) => `${l.name} (${l.file})`),
      "layers ARCHITECTURE.md does not name"
    ).toEqual([])
  })
})
