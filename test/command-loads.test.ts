/**
 * A command loads only what it uses. The `flotta` bin is a bundle split per command (packages/flotta/build.mjs);
 * an ES module loader hook sees which of its chunks a command loads, and the bundle's metafile says which packages
 * each chunk holds. `--version` and `--help` load no Effect at all; a client command, `run` and `doctor` load no
 * server, no cluster, no Postgres driver, no telemetry exporter and no test library, unless the config asks.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { pathToFileURL } from "node:url"
import { FLOTTA, ROOT } from "./support/cli.js"

const META = path.join(ROOT, "packages", "flotta", "dist", "cli-meta.json")

interface Metafile {
  readonly outputs: Record<string, { readonly inputs: Record<string, { readonly bytesInOutput: number }> }>
}

let dir: string
let hook: string
let meta: Metafile

beforeAll(() => {
  dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "flotta-loads-")))
  // The hook notes each file synchronously: a process may exit before a write to stderr from the hooks' thread.
  fs.writeFileSync(
    path.join(dir, "loader.mjs"),
    "import { appendFileSync } from \"node:fs\"\n" +
      "export async function resolve(specifier, context, next) {\n" +
      "  const resolved = await next(specifier, context)\n" +
      "  if (resolved.url.startsWith(\"file:\") && process.env.FLOTTA_LOADED)\n" +
      "    appendFileSync(process.env.FLOTTA_LOADED, `${resolved.url}\\n`)\n" +
      "  return resolved\n}\n"
  )
  hook = path.join(dir, "hook.mjs")
  fs.writeFileSync(
    hook,
    `import { register } from "node:module"\nregister(${
      JSON.stringify(pathToFileURL(path.join(dir, "loader.mjs")).href)
    })\n`
  )
  meta = JSON.parse(fs.readFileSync(META, "utf8")) as Metafile
})
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }))

/**
 * The packages whose code a command loaded (`packages/core` for `@flotta/core`'s, and each of our modules by its
 * path too: `packages/cluster/dist/ClusterConfig.js`), and how it exited.
 */
const loads = (args: ReadonlyArray<string>, env: Record<string, string> = {}) => {
  const log = path.join(dir, "loaded.txt")
  fs.rmSync(log, { force: true })
  const ran = spawnSync(process.execPath, ["--import", hook, FLOTTA, ...args], {
    cwd: dir,
    env: { ...process.env, ...env, FLOTTA_LOADED: log },
    encoding: "utf8",
    timeout: 120_000
  })
  const noted = fs.existsSync(log) ? fs.readFileSync(log, "utf8").split("\n").filter((l) => l.length > 0) : []
  const files = [...new Set(noted)].map((url) => path.relative(ROOT, new URL(url).pathname))
  const packages = new Set<string>()
  for (const file of files) {
    for (const input of Object.keys(meta.outputs[file]?.inputs ?? {})) {
      const module = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(input)
      packages.add(module?.[1] ?? input.split("/").slice(0, 2).join("/"))
      if (module === null) packages.add(input)
    }
  }
  return { packages, code: ran.status, chunks: files.length, stderr: ran.stderr }
}

/** What no command may load unless its config asks for it. */
const NEVER = [
  "pg",
  "@effect/sql-pg",
  "@effect/cluster",
  "@effect/rpc",
  "msgpackr",
  "fast-check",
  "undici",
  "@opentelemetry/sdk-trace-base"
]
/** Our modules that run servers, the scheduler, the webhooks or the cluster (their config Schemas are not these). */
const FEATURES = [
  "packages/mcp/dist/McpServer.js",
  "packages/dashboard/dist/Dashboard.js",
  "packages/scheduler/dist/Scheduler.js",
  "packages/webhooks/dist/Webhooks.js",
  "packages/cluster/dist/Cluster.js",
  "@modelcontextprotocol/server"
]
const ENGINE = "packages/core/dist/Flotta.js"
const absent = (loaded: ReadonlySet<string>, names: ReadonlyArray<string>, what: string) => {
  for (const name of names) assert.isFalse(loaded.has(name), `${what} loads ${name}`)
}

describe("what a command loads", () => {
  it("--version and --help load none of the tree and no Effect", () => {
    for (const args of [["--version"], ["--help"]]) {
      const { chunks, code, packages } = loads(args)
      assert.strictEqual(code, 0)
      assert.isAtLeast(chunks, 2, "the hook saw the bin and its entry")
      assert.isFalse(packages.has("effect"), `flotta ${args[0]} loads effect`)
      assert.isFalse(packages.has("@effect/cli"), `flotta ${args[0]} loads @effect/cli`)
      assert.isAtMost(chunks, 8, `flotta ${args[0]} loads ${chunks} files`)
    }
  })

  it("a client command loads no MCP SDK, server, cluster, database driver or test library", () => {
    const { code, packages } = loads(["list", "--url", "http://127.0.0.1:9/mcp"])
    assert.strictEqual(code, 12, "no serve answers: ServerUnreachable")
    assert.isTrue(packages.has("packages/cli/dist/McpClient.js"), "its own client")
    absent(packages, [...NEVER, ...FEATURES, ENGINE, "@modelcontextprotocol/client", "zod"], "list")
  })

  it("a one-shot run loads the engine, and none of the servers, the scheduler or the cluster", () => {
    // The claude child is a script that exits at once: what was loaded before it started is the point.
    const claude = path.join(dir, "claude.sh")
    fs.writeFileSync(claude, "#!/bin/sh\nexit 3\n")
    fs.chmodSync(claude, 0o755)
    const { packages } = loads(["run", "--simulate", "hi"], { FLOTTA_CLAUDE_PATH: claude })
    assert.isTrue(packages.has(ENGINE))
    absent(packages, [...NEVER, ...FEATURES, "@modelcontextprotocol/client"], "run")
  })

  it("loads the Postgres driver when the config's store is Postgres (the check above can fail)", () => {
    fs.writeFileSync(
      path.join(dir, "flotta.config.json"),
      JSON.stringify({ store: { postgres: "postgres://flotta@127.0.0.1:9/flotta" } })
    )
    try {
      const { packages } = loads(["doctor"])
      assert.isTrue(packages.has("pg"), "doctor reads a Postgres store with pg")
      absent(packages, ["@effect/cluster", "fast-check", "undici", ...FEATURES], "doctor")
    } finally {
      fs.rmSync(path.join(dir, "flotta.config.json"))
    }
  })
})
