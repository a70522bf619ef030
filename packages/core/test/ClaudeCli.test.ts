import { assert, describe, it } from "@effect/vitest"
import { Option } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { pathToFileURL } from "node:url"
import { dependencyBinary } from "../src/ClaudeCli.js"

/** The platform package's name as `@anthropic-ai/claude-code`'s own install script derives it (glibc here). */
const PLATFORM = `@anthropic-ai/claude-code-${process.platform}-${process.arch}`
const ELF = Buffer.from([0x7f, 0x45, 0x4c, 0x46, 2, 1, 1, 0])
const STUB = "#!/usr/bin/env node\nconsole.error('claude: the native binary was not installed; run its postinstall')\n"

/** A project whose node_modules holds the claude wrapper, and optionally its platform package. */
const project = (options: { readonly wrapperBin: string | Buffer; readonly platformBinary?: Buffer }) => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "flotta-claude-bin-"))
  const wrapper = path.join(root, "node_modules", "@anthropic-ai", "claude-code")
  fs.mkdirSync(path.join(wrapper, "bin"), { recursive: true })
  fs.writeFileSync(
    path.join(wrapper, "package.json"),
    JSON.stringify({ name: "@anthropic-ai/claude-code", bin: { claude: "bin/claude.exe" } })
  )
  fs.writeFileSync(path.join(wrapper, "bin", "claude.exe"), options.wrapperBin)
  if (options.platformBinary !== undefined) {
    const platform = path.join(root, "node_modules", ...PLATFORM.split("/"))
    fs.mkdirSync(platform, { recursive: true })
    fs.writeFileSync(path.join(platform, "package.json"), JSON.stringify({ name: PLATFORM }))
    fs.writeFileSync(path.join(platform, "claude"), options.platformBinary)
  }
  return { root, from: pathToFileURL(path.join(root, "main.js")).href, wrapper }
}

describe("the claude binary of the pinned dependency", () => {
  it("is the platform package's when the wrapper's postinstall never ran (npm 12 without allowScripts)", () => {
    const { from, root } = project({ wrapperBin: STUB, platformBinary: ELF })
    assert.deepStrictEqual(
      dependencyBinary(from),
      Option.some(path.join(root, "node_modules", ...PLATFORM.split("/"), "claude"))
    )
  })

  it("is the wrapper's own bin when that is native and no platform package is there", () => {
    const { from, wrapper } = project({ wrapperBin: ELF })
    assert.deepStrictEqual(dependencyBinary(from), Option.some(path.join(wrapper, "bin", "claude.exe")))
  })

  it("is none when only the placeholder is there, so the search goes on to PATH", () => {
    const { from } = project({ wrapperBin: STUB })
    assert.isTrue(Option.isNone(dependencyBinary(from)))
  })

  it("is the platform package's when it is a dependency of its own, with no wrapper (the flotta package)", () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), "flotta-claude-bin-"))
    const platform = path.join(root, "node_modules", ...PLATFORM.split("/"))
    fs.mkdirSync(platform, { recursive: true })
    fs.writeFileSync(path.join(platform, "package.json"), JSON.stringify({ name: PLATFORM }))
    fs.writeFileSync(path.join(platform, "claude"), ELF)
    const from = pathToFileURL(path.join(root, "main.js")).href
    assert.deepStrictEqual(dependencyBinary(from), Option.some(path.join(platform, "claude")))
    // A placeholder there (not a native binary) is not taken.
    fs.writeFileSync(path.join(platform, "claude"), STUB)
    assert.isTrue(Option.isNone(dependencyBinary(from)))
  })

  it("is none when the dependency is not installed", () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), "flotta-claude-bin-"))
    assert.isTrue(Option.isNone(dependencyBinary(pathToFileURL(path.join(root, "main.js")).href)))
  })
})
