/**
 * The package as a user gets it: `flotta` packed with `npm pack` (its prepack bundles the workspace), installed on
 * its own into an empty project and globally, with the npm and Node running this test (CI runs it with npm 12 on
 * Node 24, and with npm 11 on Node 20). It must be one package with one copy of each dependency, within 600 MB
 * (the claude binary is 384 of them), and npm must print nothing the README contradicts: npm 12 runs no
 * dependency's install script unless the project allows it, so nothing may have one. Then `flotta run
 * --simulate`, `flotta serve --simulate` with its state in SQLite, a script that drives a fleet, and a TypeScript
 * program type-checked against the package's declarations. On Node 20 the project takes the README's extra step
 * (better-sqlite3 12 beside it, for the SQLite store its serve keeps). `npm install -g`, the README's first command,
 * is checked where the README gives it plainly, on a Node with node:sqlite (CI's Node 24 and npm 12): on Node 20 the
 * tarball is installed once, into the project.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { type ChildProcess, spawn, spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { ROOT, runProgram } from "./support/cli.js"
import { freePort } from "./support/ports.js"
import { waitUntil } from "./support/waiting.js"

const INSTALL_TIMEOUT = 15 * 60_000
const MB = 1024 * 1024

/** Node 22.13 and later keep the store on node:sqlite; Node 20 needs better-sqlite3 12 (the README says so). */
const [major = 0, minor = 0] = process.versions.node.split(".").map(Number)
const NODE_SQLITE = major > 22 || (major === 22 && minor >= 13)
const BETTER_SQLITE3 = "12.11.1"
const EXTRA = NODE_SQLITE ? [] : [`better-sqlite3@${BETTER_SQLITE3}`]

/**
 * On Node 20, better-sqlite3's install script (prebuild-install) takes the prebuilt binary of its release, which a
 * user's install downloads: here it is the one the workspace's own install built for this Node, offered as a local
 * prebuild, so the test does not compile SQLite a second time. The script still runs, and npm still notes it.
 */
const prebuiltBetterSqlite3 = (into: string): Record<string, string> => {
  const workspace = path.join(ROOT, "node_modules", "better-sqlite3")
  const binding = path.join(workspace, "build", "Release", "better_sqlite3.node")
  const version = fs.existsSync(binding)
    ? (JSON.parse(fs.readFileSync(path.join(workspace, "package.json"), "utf8")) as { version: string }).version
    : undefined
  if (NODE_SQLITE || version !== BETTER_SQLITE3) return {}
  fs.mkdirSync(into, { recursive: true })
  const name = `better-sqlite3-v${version}-node-v${process.versions.modules}-${process.platform}-${process.arch}.tar.gz`
  const packed = spawnSync("tar", ["-czf", path.join(into, name), "-C", workspace, "build/Release/better_sqlite3.node"])
  return packed.status === 0 ? { npm_config_better_sqlite3_local_prebuilds: into } : {}
}

let dir: string
let tarball: string
let project: string
let npmVersion: string
let installLog: string

/** Runs a command to its end in the project, with stdin closed. */
const run = (command: string, args: ReadonlyArray<string>, env: Record<string, string> = {}, timeout = 180_000) =>
  runProgram(command, args, { cwd: project, env, timeout })

const npx = (args: ReadonlyArray<string>, env: Record<string, string> = {}) => run("npx", ["--no", ...args], env)

/** Every installed package under `root` by name, with the places it is installed at. */
const installed = (root: string): Map<string, Array<string>> => {
  const found = new Map<string, Array<string>>()
  const walk = (modules: string) => {
    if (!fs.existsSync(modules)) return
    for (const entry of fs.readdirSync(modules)) {
      if (entry.startsWith(".")) continue
      const names = entry.startsWith("@")
        ? fs.readdirSync(path.join(modules, entry)).map((sub) => `${entry}/${sub}`)
        : [entry]
      for (const name of names) {
        const at = path.join(modules, name)
        if (!fs.existsSync(path.join(at, "package.json"))) continue
        found.set(name, [...(found.get(name) ?? []), at])
        walk(path.join(at, "node_modules"))
      }
    }
  }
  walk(root)
  return found
}

/** The bytes of the files under `root` (a hard link counted once). */
const sizeOf = (root: string): number => {
  const seen = new Set<number>()
  let total = 0
  const walk = (at: string) => {
    for (const entry of fs.readdirSync(at, { withFileTypes: true })) {
      const file = path.join(at, entry.name)
      if (entry.isDirectory()) walk(file)
      else if (entry.isFile()) {
        const stat = fs.statSync(file)
        if (seen.has(stat.ino)) continue
        seen.add(stat.ino)
        total += stat.size
      }
    }
  }
  walk(root)
  return total
}

/**
 * What npm printed that the README would contradict: a script it blocked or asks to allow, an engine it refuses.
 * On Node 20 the README has people add better-sqlite3 (its install script builds the store's driver) and says so:
 * npm's note about that one script is what the README told them to expect, and nothing else is.
 */
const complaints = (log: string) => {
  const lines = log.split("\n").filter((line) => /install-scripts|allow-scripts|EBADENGINE/i.test(line))
  if (NODE_SQLITE) return lines
  const named = lines.flatMap((line) => /^npm warn install-scripts\s+(\S+)@\S+ \(/.exec(line)?.[1] ?? [])
  const readme = fs.readFileSync(path.join(ROOT, "README.md"), "utf8")
  const expected = named.length > 0 && named.every((name) => name === "better-sqlite3") &&
    /better-sqlite3@12[^\n]*\n?[^\n]*install script/.test(readme)
  return expected ? lines.filter((line) => /EBADENGINE/.test(line)) : lines
}

beforeAll(async () => {
  dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "flotta-package-")))
  const tarballs = path.join(dir, "tarballs")
  fs.mkdirSync(tarballs)
  // The workspace is built (the test command builds first); `npm pack` runs the package's prepack, the bundle.
  const packed = spawnSync("npm", ["pack", "--workspace", "packages/flotta", "--pack-destination", tarballs], {
    cwd: ROOT,
    encoding: "utf8"
  })
  if (packed.status !== 0) throw new Error(`npm pack failed: ${packed.stderr}`)
  const files = fs.readdirSync(tarballs)
  if (files.length !== 1) throw new Error(`npm pack made ${files.length} tarballs, not 1: ${files.join(", ")}`)
  tarball = path.join(tarballs, files[0]!)
  project = path.join(dir, "project")
  fs.mkdirSync(project)
  fs.writeFileSync(
    path.join(project, "package.json"),
    JSON.stringify({ name: "a-user", private: true, type: "module" })
  )
  npmVersion = spawnSync("npm", ["--version"], { encoding: "utf8" }).stdout.trim()
  const prebuilt = prebuiltBetterSqlite3(path.join(dir, "prebuilds"))
  const added = await run("npm", ["install", "--no-audit", "--no-fund", tarball, ...EXTRA], prebuilt, INSTALL_TIMEOUT)
  installLog = added.stdout + added.stderr
  if (added.code !== 0) throw new Error(`npm ${npmVersion} install of the tarball failed:\n${installLog}`)
}, INSTALL_TIMEOUT + 60_000)

afterAll(() => {
  if (dir !== undefined) fs.rmSync(dir, { recursive: true, force: true })
})

describe(`flotta installed from its tarball (Node ${process.versions.node}, npm)`, () => {
  it("is one package: its bundle, effect, and the claude binary of this platform; no install script", async () => {
    const packages = installed(path.join(project, "node_modules"))
    assert.deepStrictEqual(packages.get("flotta"), [path.join(project, "node_modules", "flotta")])
    assert.strictEqual(packages.get("effect")?.length, 1, "one copy of effect")
    for (const [name, at] of packages) assert.strictEqual(at.length, 1, `${name} is installed once, not at ${at}`)
    assert.deepStrictEqual([...packages.keys()].filter((name) => name.startsWith("@flotta/")), [])
    assert.isTrue(
      [...packages.keys()].some((name) => /^@anthropic-ai\/claude-code-[a-z0-9]+-[a-z0-9]+/.test(name)),
      "the platform's claude package"
    )
    assert.deepStrictEqual(complaints(installLog), [], `npm ${npmVersion} printed:\n${installLog}`)

    const ran = await npx(["flotta", "run", "--simulate", "hi"])
    assert.strictEqual(ran.code, 0, `npm ${npmVersion}: ${ran.stderr}\n${installLog}`)
    assert.strictEqual(ran.stdout, "ECHO: hi\n")
    const doctor = await npx(["flotta", "doctor"])
    assert.match(doctor.stdout + doctor.stderr, /claude: \S+ \(from dependency\) is 2\.1\.332/)
    // The run made the project's store (it is recorded there), on the driver of this Node.
    assert.match(doctor.stdout, /store: sqlite \S+state\.db \(schema v\d+, [^)]*(node:sqlite|better-sqlite3)/)
    assert.include(doctor.stdout, NODE_SQLITE ? "node:sqlite" : "better-sqlite3")
  })

  it("`npx flotta serve --simulate` keeps its state in SQLite, which a restart reads back", async () => {
    const port = await freePort()
    fs.writeFileSync(
      path.join(project, "flotta.config.json"),
      JSON.stringify({ agents: [{ name: "scout" }], mcp: { port }, dashboard: {} })
    )
    // The bin npx runs, started directly: a SIGTERM to npx would end npx before the serve it started.
    const bin = path.join(project, "node_modules", ".bin", "flotta")
    const serve = (): { child: ChildProcess; out: { stderr: string; exited: boolean; code: number | null } } => {
      const child = spawn(bin, ["serve", "--simulate"], { cwd: project, stdio: ["ignore", "pipe", "pipe"] })
      const out = { stderr: "", exited: false, code: null as number | null }
      child.stdout!.on("data", () => {})
      child.stderr!.on("data", (d) => (out.stderr += d))
      child.on("exit", (code) => {
        out.exited = true
        out.code = code
      })
      return { child, out }
    }
    const stop = async ({ child, out }: ReturnType<typeof serve>) => {
      child.kill("SIGTERM")
      await waitUntil(() => out.exited, 30_000, "serve to stop")
    }
    const first = serve()
    try {
      await waitUntil(() => first.out.stderr.includes("flotta serve:") || first.out.exited, 120_000, "serve to start")
      assert.isFalse(first.out.exited, first.out.stderr)
      const asked = await npx(["flotta", "ask", "scout", "ECHO remember me"])
      assert.strictEqual(asked.code, 0, asked.stderr)
      assert.strictEqual(asked.stdout, "ECHO: remember me\n")
      // The dashboard's assets come with the bundle.
      const script = await fetch(`http://127.0.0.1:${port}/assets/uplot.iife.min.js`)
      assert.strictEqual(script.status, 200)
    } finally {
      await stop(first)
    }
    assert.isTrue(fs.existsSync(path.join(project, ".flotta", "state.db")), "the store is an SQLite file")
    const reports = await npx(["flotta", "reports", "--agent", "scout", "--json"])
    assert.strictEqual(reports.code, 0, reports.stderr)
    assert.include(reports.stdout, "remember me")

    const second = serve()
    try {
      await waitUntil(() => second.out.stderr.includes("flotta serve:") || second.out.exited, 120_000, "restart")
      assert.isFalse(second.out.exited, second.out.stderr)
      const transcript = await npx(["flotta", "transcript", "scout", "--json"])
      assert.strictEqual(transcript.code, 0, transcript.stderr)
      assert.include(transcript.stdout, "remember me")
    } finally {
      await stop(second)
    }
  })

  it("is within 600 MB in the project, the claude binary most of it", () => {
    const modules = path.join(project, "node_modules")
    const binary = [...installed(modules)].find(([name]) => name.startsWith("@anthropic-ai/claude-code-"))
    assert.isDefined(binary, "the platform's claude package")
    const size = sizeOf(modules)
    assert.isAtMost(size, 600 * MB, `the install is ${(size / MB).toFixed(0)} MB`)
    assert.isAtLeast(sizeOf(binary![1][0]!), 300 * MB, "the claude binary is most of it")
  })

  // The README's `npm i -g flotta` as it is written (on Node 20 it adds better-sqlite3, which the project above does).
  if (NODE_SQLITE) {
    it(
      "`npm install -g` is one package within 600 MB, says nothing to contradict the README, and answers",
      async () => {
        const prefix = path.join(dir, "global")
        const added = await run(
          "npm",
          ["install", "-g", "--prefix", prefix, "--no-audit", "--no-fund", tarball],
          {},
          INSTALL_TIMEOUT
        )
        assert.strictEqual(added.code, 0, added.stderr)
        assert.deepStrictEqual(complaints(added.stdout + added.stderr), [], added.stdout + added.stderr)
        const modules = path.join(prefix, "lib", "node_modules")
        assert.deepStrictEqual(fs.readdirSync(modules).filter((name) => !name.startsWith(".")), ["flotta"])
        const packages = installed(modules)
        for (const [name, at] of packages) assert.strictEqual(at.length, 1, `${name} is installed once, not at ${at}`)
        const size = sizeOf(prefix)
        const binary = [...packages].find(([name]) => name.startsWith("@anthropic-ai/claude-code-"))
        assert.isDefined(binary, "the platform's claude package")
        const claude = sizeOf(binary![1][0]!)
        assert.isAtMost(size, 600 * MB, `the install is ${(size / MB).toFixed(0)} MB`)
        assert.isAtLeast(claude, 300 * MB, "the claude binary is most of it")

        const flotta = path.join(prefix, "bin", "flotta")
        const version = await run(flotta, ["--version"])
        assert.strictEqual(version.code, 0, version.stderr)
        assert.match(version.stdout, /^\d+\.\d+\.\d+\n$/)
        const ran = await run(flotta, ["run", "--simulate", "hi from anywhere"])
        assert.strictEqual(ran.code, 0, ran.stderr)
        assert.strictEqual(ran.stdout, "ECHO: hi from anywhere\n")
      },
      INSTALL_TIMEOUT
    )
  }

  it("a script that imports flotta drives a simulated fleet, and rejects with the typed errors", async () => {
    fs.writeFileSync(
      path.join(project, "drive.mjs"),
      [
        `import { AgentNotFound, createFleet } from "flotta"`,
        `const fleet = createFleet({ simulate: true })`,
        `await fleet.spawn("scout", { cwd: "." })`,
        `console.log(await fleet.ask("scout", "ECHO from a script"))`,
        `const missing = await fleet.ask("ghost", "hi").catch((e) => e)`,
        `console.log(missing instanceof AgentNotFound, missing._tag)`,
        `await fleet.shutdown()`
      ].join("\n")
    )
    const ran = await run(process.execPath, ["drive.mjs"])
    assert.strictEqual(ran.code, 0, ran.stderr)
    assert.strictEqual(ran.stdout, "ECHO: from a script\ntrue AgentNotFound\n")
  })

  it("types a TypeScript program against the package: results are typed, and a wrong use is an error", () => {
    const tsc = path.join(ROOT, "node_modules", "typescript", "bin", "tsc")
    const options = ["--noEmit", "--strict", "--skipLibCheck", "--module", "nodenext", "--target", "es2022"]
    const check = (source: string) => {
      fs.writeFileSync(path.join(project, "typed.ts"), source)
      return spawnSync(process.execPath, [tsc, ...options, "typed.ts"], { cwd: project, encoding: "utf8" })
    }
    const good = check([
      `import { createFleet, type Fleet } from "flotta"`,
      `const fleet: Fleet = createFleet({ simulate: true })`,
      `const info = await fleet.spawn("scout", { cwd: "." })`,
      `const name: string = info.name`,
      `const turns: number = (await fleet.status(name)).turns`,
      `export { turns }`
    ].join("\n"))
    assert.strictEqual(good.status, 0, good.stdout + good.stderr)
    const bad = check([
      `import { createFleet } from "flotta"`,
      `const fleet = createFleet()`,
      `const count: number = (await fleet.spawn("scout")).name`,
      `export { count }`
    ].join("\n"))
    assert.notStrictEqual(bad.status, 0, "a string is not a number")
    assert.include(bad.stdout, "typed.ts(3,7): error TS2322")
  })
})
