/**
 * `/assets/<file>`: the client script and stylesheet from the package's `static/`, and uPlot from its npm
 * package, so the page needs no CDN and works offline. `static/` is found from this module's own directory,
 * which is `src/` under vitest and `dist/` once built: both sit beside it (and in the `flotta` bundle, whose
 * `static/` holds uPlot's files too, beside its chunks' directory). Each file is read once, then served from
 * memory.
 */
import { Effect, Option } from "effect"
import { existsSync } from "node:fs"
import { readFile } from "node:fs/promises"
import { createRequire } from "node:module"
import { fileURLToPath } from "node:url"

export interface Asset {
  readonly body: Uint8Array
  readonly type: string
}

const staticFile = (name: string) => () => fileURLToPath(new URL(`../static/${name}`, import.meta.url))
const uplotFile = (name: string) => () => {
  const bundled = staticFile(name)()
  return existsSync(bundled) ? bundled : createRequire(import.meta.url).resolve(`uplot/dist/${name}`)
}

const JS = "text/javascript; charset=utf-8"
const CSS = "text/css; charset=utf-8"

/** The files served, by their name under `/assets/`: where each is, and its content type. */
const FILES: Record<string, { readonly locate: () => string; readonly type: string }> = {
  "app.js": { locate: staticFile("app.js"), type: JS },
  "app.css": { locate: staticFile("app.css"), type: CSS },
  "uplot.iife.min.js": { locate: uplotFile("uPlot.iife.min.js"), type: JS },
  "uplot.min.css": { locate: uplotFile("uPlot.min.css"), type: CSS }
}

const cache = new Map<string, Asset>()

/** An asset by name, or none for a name that is not one (a missing file is a broken install: a defect). */
export const asset = Effect.fn("Assets.asset")(function*(file: string) {
  return yield* Effect.suspend(() => {
    const known = Object.hasOwn(FILES, file) ? FILES[file] : undefined
    if (known === undefined) return Effect.succeedNone
    const cached = cache.get(file)
    if (cached !== undefined) return Effect.succeedSome(cached)
    return Effect.promise(() => readFile(known.locate())).pipe(
      Effect.map((body) => {
        const read: Asset = { body: new Uint8Array(body), type: known.type }
        cache.set(file, read)
        return Option.some(read)
      })
    )
  })
})
