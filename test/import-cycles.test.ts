/**
 * The import-cycle check of `npm run lint` (.dependency-cruiser.cjs, dependency-cruiser) sees what it must: a
 * cycle through relative `.js` imports of `.ts` sources, through type-only imports and through dynamic `import()`,
 * and `@flotta/*` imports resolved to the other package's sources (so a cycle across packages is seen too).
 */
import { cruise } from "dependency-cruiser"
import type { ICruiseResult } from "dependency-cruiser"
import extractDepcruiseOptions from "dependency-cruiser/config-utl/extract-depcruise-options"
import extractTSConfig from "dependency-cruiser/config-utl/extract-ts-config"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, describe, expect, it } from "vitest"

const ROOT = path.join(import.meta.dirname, "..")

/** Cruises `files` (relative to the root) with the lint's own configuration (`maxDepth` 0: all the way). */
const check = async (files: ReadonlyArray<string>, maxDepth = 0): Promise<ICruiseResult> => {
  const cwd = process.cwd()
  process.chdir(ROOT) // the configuration's paths are the root's
  try {
    const options = await extractDepcruiseOptions(path.join(ROOT, ".dependency-cruiser.cjs"))
    const tsConfig = extractTSConfig(path.join(ROOT, "tsconfig.depcruise.json"))
    const result = await cruise([...files], { ...options, validate: true, maxDepth }, {}, { tsConfig })
    if (typeof result.output === "string") throw new Error("dependency-cruiser gave text, not a result")
    return result.output
  } finally {
    process.chdir(cwd)
  }
}

const cycles = (result: ICruiseResult) =>
  result.summary.violations.filter((v) => v.rule.name === "no-circular").map((
    v
  ) => [v.from, ...(v.cycle ?? []).map((c) => c.name)])

const fixtures = fs.mkdtempSync(path.join(os.tmpdir(), "flotta-cycles-"))
afterAll(() => fs.rmSync(fixtures, { recursive: true, force: true }))

/** Writes one fixture: its files, relative to a directory of its own; returns the directory relative to the root. */
const fixture = (name: string, files: Record<string, string>): string => {
  const dir = path.join(fixtures, name)
  for (const [file, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, file)), { recursive: true })
    fs.writeFileSync(path.join(dir, file), text)
  }
  return path.relative(ROOT, dir)
}

describe("the import-cycle check", () => {
  it("reports a cycle through `.js` imports of `.ts` sources, type-only imports and dynamic import()", async () => {
    const dir = fixture("knots", {
      "Store.ts": `import type { Status } from "./Agent.js"\nexport const store = (s: Status) => s\n`,
      "Agent.ts": `import { store } from "./Store.js"\nexport type Status = "idle"\nexport const a = store\n`,
      "Otlp.ts": `export type Settings = { url: string }\nexport const load = () => import("./internal/sdk.js")\n`,
      "internal/sdk.ts": `import type { Settings } from "../Otlp.js"\nexport const layer = (s: Settings) => s\n`,
      "Tower.ts": `import { a } from "./Agent.js"\nexport const tower = a\n`
    })
    const result = await check([dir])
    expect(result.summary.violations.filter((v) => v.rule.name !== "no-circular")).toEqual([])
    const found = cycles(result).map((cycle) => [...new Set(cycle.map((file) => path.basename(file)))].sort().join(" "))
    expect(new Set(found)).toEqual(new Set(["Agent.ts Store.ts", "Otlp.ts sdk.ts"]))
  })

  it("resolves @flotta/* imports to the other package's sources", async () => {
    const result = await check(["packages/flotta/src/index.ts"], 1)
    const index = result.modules.find((m) => m.source === "packages/flotta/src/index.ts")
    const resolved = index?.dependencies.filter((d) => d.module.startsWith("@flotta/")).map((d) => d.resolved)
    expect(resolved).toContain("packages/cli/src/ConfigFile.ts")
    expect(resolved).toContain("packages/core/src/Client.ts")
    expect(result.modules.some((m) => m.source.includes("/dist/"))).toBe(false)
  })

  it("reports an import it cannot follow", async () => {
    const dir = fixture("unresolvable", { "A.ts": `import { b } from "./Missing.js"\nexport const a = b\n` })
    const result = await check([dir])
    expect(result.summary.violations.map((v) => v.rule.name)).toEqual(["not-to-unresolvable"])
  })
})
