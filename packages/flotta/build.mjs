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
  logLevel: "warning",
  // Paths in the metafile are the repository's, wherever this runs from (the workspace, or `npm pack`'s prepack).
  absWorkingDir: path.join(packages, ".."),
  write: false
}

/**
 * Writes a build's files into `dir`, each only when its bytes changed, then removes what the build no longer has.
 * A build of the same sources is a no-op: a `flotta` that runs meanwhile (a test, as `npm pack` rebuilds) never
 * finds a chunk missing.
 */
const writeOutputs = (dir, outputFiles) => {
  const written = new Set()
  for (const file of outputFiles) {
    written.add(file.path)
    const same = fs.existsSync(file.path) && Buffer.compare(fs.readFileSync(file.path), file.contents) === 0
    if (same) continue
    fs.mkdirSync(path.dirname(file.path), { recursive: true })
    const temporary = `${file.path}.${process.pid}.tmp`
    fs.writeFileSync(temporary, file.contents)
    fs.renameSync(temporary, file.path)
  }
  if (!fs.existsSync(dir)) return
  for (const entry of fs.readdirSync(dir, { recursive: true, withFileTypes: true })) {
    const file = path.join(entry.parentPath, entry.name)
    if (entry.isFile() && !written.has(file)) fs.rmSync(file)
  }
}

/**
 * The newest modification time under each path (a file, or a directory's files), or Infinity when one is missing.
 * `tsc -b`'s own bookkeeping (.tsbuildinfo) is not an input: a build with nothing to do may touch it.
 */
const newest = (paths) => {
  let latest = 0
  const visit = (at) => {
    if (!fs.existsSync(at)) return (latest = Infinity)
    const stat = fs.statSync(at)
    if (!stat.isDirectory()) return (latest = Math.max(latest, stat.mtimeMs))
    for (const entry of fs.readdirSync(at, { withFileTypes: true })) {
      if (!entry.name.endsWith(".tsbuildinfo")) visit(path.join(at, entry.name))
    }
  }
  for (const at of paths) visit(at)
  return latest
}

// A build of what is built already is skipped: the install's `prepare` builds, so `npm test`'s build and `npm pack`'s
// prepack after it cost nothing (CI builds once per Node). Its inputs: the packages' compiled output, the dashboard's
// assets, this script and its stubs, and the lockfile (the dependencies bundled); FLOTTA_REBUILD=1 forces a build.
const stamp = path.join(dist, ".bundled")
const inputs = [
  ...["core", "mcp", "scheduler", "dashboard", "cluster", "webhooks", "cli"].map((pkg) =>
    path.join(packages, pkg, "dist")
  ),
  path.join(dist, "index.js"),
  path.join(dist, "index.d.ts"),
  path.join(packages, "dashboard", "static"),
  path.join(here, "stubs"),
  import.meta.filename,
  path.join(packages, "..", "package-lock.json")
]
const outputs = [
  path.join(dist, "cli", "Main.js"),
  path.join(dist, "lib", "index.js"),
  path.join(dist, "static"),
  path.join(dist, "types")
]
if (
  process.env.FLOTTA_REBUILD === undefined && fs.existsSync(stamp) && newest(outputs) !== Infinity &&
  newest(inputs) <= fs.statSync(stamp).mtimeMs
) {
  process.exit(0)
}
fs.rmSync(stamp, { force: true })

const cli = await esbuild.build({
  ...common,
  entryPoints: { Main: path.join(packages, "cli", "dist", "Main.js") },
  outdir: path.join(dist, "cli"),
  external: OPTIONAL,
  metafile: true
})
writeOutputs(path.join(dist, "cli"), cli.outputFiles)
// What each chunk holds (not packed): test/command-loads.test.ts reads which packages a command loaded.
fs.writeFileSync(path.join(dist, "cli-meta.json"), JSON.stringify(cli.metafile))
const lib = await esbuild.build({
  ...common,
  entryPoints: { index: path.join(dist, "index.js") },
  outdir: path.join(dist, "lib"),
  external: [...OPTIONAL, "effect", "effect/*"]
})
writeOutputs(path.join(dist, "lib"), lib.outputFiles)

// The dashboard finds its files at ../static from its module, which is now a chunk of dist/cli or dist/lib.
const uplot = path.dirname(
  (await import("node:module")).createRequire(path.join(packages, "dashboard", "package.json"))
    .resolve("uplot/package.json")
)
const assets = [
  ...fs.readdirSync(path.join(packages, "dashboard", "static")).map((
    file
  ) => [path.join(packages, "dashboard", "static", file), file]),
  ...["uPlot.iife.min.js", "uPlot.min.css"].map((file) => [path.join(uplot, "dist", file), file])
]
const staticDir = path.join(dist, "static")
writeOutputs(
  staticDir,
  assets.map(([from, name]) => ({ path: path.join(staticDir, name), contents: fs.readFileSync(from) }))
)

// Declarations: each package's under types/<package>/, `@flotta/<package>[/<module>]` made relative.
const types = path.join(dist, "types")
fs.rmSync(types, { recursive: true, force: true })
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
// Written last: the bundle is whole (a build stopped halfway leaves the stamp older than its inputs).
fs.writeFileSync(stamp, "")
