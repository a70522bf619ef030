// Builds the one package users install from the workspace's compiled packages (run after `tsc -b`):
//   dist/cli/     the `flotta` command, bundled with every JavaScript dependency (effect included), split so that
//                 each command loads only its own chunks: `flotta --version` reads one small file, not 1,400
//   dist/lib/     the Promise API (`import { createFleet } from "flotta"`), bundled too, but on the `effect` the
//                 package depends on, so that an application's own Effect code and `fleet.runtime` are one Effect
//   dist/static/  the dashboard's assets and uPlot's, found beside the chunks
//   dist/types/   the packages' declarations, their `@flotta/*` imports made relative
// What is left outside: native and optional modules a user installs when they need them (better-sqlite3 on Node
// 20, tsx for a TypeScript config on a Node without type stripping, the optional accelerators of pg, msgpackr, ws).
import * as esbuild from "esbuild"
import * as fs from "node:fs"
import * as path from "node:path"

const here = import.meta.dirname
const packages = path.join(here, "..")
const dist = path.join(here, "dist")

/** Loaded by name at run time when present, never bundled. */
const OPTIONAL = [
  "better-sqlite3",
  "tsx",
  "tsx/*",
  "pg-native",
  "msgpackr-extract",
  "@parcel/watcher",
  "bufferutil",
  "utf-8-validate"
]

// Some CommonJS dependencies require Node's modules by name: an ES module has no `require` of its own.
const REQUIRE = "import { createRequire as __flottaRequire } from \"node:module\"; " +
  "const require = __flottaRequire(import.meta.url);"

// Replaced by modules that say they are absent (see stubs/): imported by a dependency, never used by flotta.
const STUBS = {
  undici: path.join(here, "stubs", "undici.js"),
  "fast-check": path.join(here, "stubs", "fast-check.js")
}

const common = {
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node20.19",
  splitting: true,
  minifyWhitespace: true,
  minifySyntax: true,
  legalComments: "none",
  // Chunks sit beside the entry, so that `../static` from any of them is dist/static (see the dashboard's Assets).
  chunkNames: "[name]-[hash]",
  banner: { js: REQUIRE },
  alias: STUBS,
  logLevel: "warning"
}

fs.rmSync(path.join(dist, "cli"), { recursive: true, force: true })
fs.rmSync(path.join(dist, "lib"), { recursive: true, force: true })
fs.rmSync(path.join(dist, "static"), { recursive: true, force: true })
fs.rmSync(path.join(dist, "types"), { recursive: true, force: true })

const cli = await esbuild.build({
  ...common,
  entryPoints: { Main: path.join(packages, "cli", "dist", "Main.js") },
  outdir: path.join(dist, "cli"),
  external: OPTIONAL,
  metafile: true
})
// What each chunk holds (not packed): test/command-loads.test.ts reads which packages a command loaded.
fs.writeFileSync(path.join(dist, "cli-meta.json"), JSON.stringify(cli.metafile))
await esbuild.build({
  ...common,
  entryPoints: { index: path.join(dist, "index.js") },
  outdir: path.join(dist, "lib"),
  external: [...OPTIONAL, "effect", "effect/*"]
})

// The dashboard finds its files at ../static from its module, which is now a chunk of dist/cli or dist/lib.
const staticDir = path.join(dist, "static")
fs.cpSync(path.join(packages, "dashboard", "static"), staticDir, { recursive: true })
const uplot = path.dirname(
  (await import("node:module")).createRequire(path.join(packages, "dashboard", "package.json"))
    .resolve("uplot/package.json")
)
for (const file of ["uPlot.iife.min.js", "uPlot.min.css"]) {
  fs.copyFileSync(path.join(uplot, "dist", file), path.join(staticDir, file))
}

// Declarations: each package's under types/<package>/, `@flotta/<package>[/<module>]` made relative.
const types = path.join(dist, "types")
const relative = (fromFile, target) => {
  const rel = path.relative(path.dirname(fromFile), target).split(path.sep).join("/")
  return rel.startsWith(".") ? rel : `./${rel}`
}
const rewrite = (file) => {
  const text = fs.readFileSync(file, "utf8").replace(
    /(["'])@flotta\/([a-z]+)(?:\/([A-Za-z0-9/]+))?\1/g,
    (_, quote, pkg, module) => `${quote}${relative(file, path.join(types, pkg, `${module ?? "index"}.js`))}${quote}`
  ).replace(/\n\/\/# sourceMappingURL=.*$/, "\n")
  fs.writeFileSync(file, text)
}
const copyDeclarations = (from, to) => {
  for (const entry of fs.readdirSync(from, { withFileTypes: true })) {
    const source = path.join(from, entry.name)
    const target = path.join(to, entry.name)
    if (entry.isDirectory()) copyDeclarations(source, target)
    else if (entry.name.endsWith(".d.ts")) {
      fs.mkdirSync(to, { recursive: true })
      fs.copyFileSync(source, target)
      rewrite(target)
    }
  }
}
for (const pkg of ["core", "mcp", "scheduler", "dashboard", "cluster", "webhooks", "cli"]) {
  copyDeclarations(path.join(packages, pkg, "dist"), path.join(types, pkg))
}
fs.mkdirSync(path.join(types, "flotta"), { recursive: true })
fs.copyFileSync(path.join(dist, "index.d.ts"), path.join(types, "flotta", "index.d.ts"))
rewrite(path.join(types, "flotta", "index.d.ts"))
