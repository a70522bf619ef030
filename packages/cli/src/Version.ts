/** flotta's version: the nearest package.json above this module (the cli's own, or the `flotta` bundle's). */
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

const versionOf = (dir: string): string => {
  const file = path.join(dir, "package.json")
  if (fs.existsSync(file)) return (JSON.parse(fs.readFileSync(file, "utf8")) as { readonly version: string }).version
  const up = path.dirname(dir)
  return up === dir ? "unknown" : versionOf(up)
}

export const version: string = versionOf(path.dirname(fileURLToPath(import.meta.url)))
