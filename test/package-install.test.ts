/**
 * The packages as a user gets them: every workspace packed with `npm pack`, the tarballs installed into an empty
 * project with the npm and Node running this test (CI runs it with npm 12 on Node 24, and with npm 11 on Node 20),
 * then `npx flotta run --simulate`, `npx flotta serve --simulate` with its state in SQLite, and a script that
 * imports `flotta` and drives an agent. npm 12 runs no dependency's install script here (the project has no
 * `allowScripts`), which is the point: nothing may depend on one.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { type ChildProcess, spawn, spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { ROOT, runProgram } from "./support/cli.js"
import { type FakeMessagesApi, offlineEnv, startFakeMessagesApi } from "./support/FakeMessagesApi.js"
import { freePort } from "./support/ports.js"
import { waitUntil } from "./support/waiting.js"

const INSTALL_TIMEOUT = 15 * 60_000

let dir: string
let project: string
let api: FakeMessagesApi
let npmVersion: string
let installLog: string

/** Runs a command to its end in the project, with stdin closed. */
const run = (command: string, args: ReadonlyArray<string>, env: Record<string, string> = {}, timeout = 180_000) =>
  runProgram(command, args, { cwd: project, env, timeout })

const npx = (args: ReadonlyArray<string>, env: Record<string, string> = {}) => run("npx", ["--no", ...args], env)

beforeAll(async () => {
  dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "flotta-package-")))
  const tarballs = path.join(dir, "tarballs")
  fs.mkdirSync(tarballs)
  // The packages are packed as they are built (the test command type-checks and builds first).
  const packed = spawnSync("npm", ["pack", "--workspaces", "--pack-destination", tarballs], {
    cwd: ROOT,
    encoding: "utf8"
  })
  if (packed.status !== 0) throw new Error(`npm pack failed: ${packed.stderr}`)
  // npm 11 and 12 shape `npm pack --json` differently: the destination's listing is the same for both.
  const files = fs.readdirSync(tarballs).map((file) => path.join(tarballs, file))
  if (files.length !== 8) throw new Error(`npm pack made ${files.length} tarballs, not 8: ${files.join(", ")}`)
  project = path.join(dir, "project")
  fs.mkdirSync(project)
  fs.writeFileSync(
    path.join(project, "package.json"),
    JSON.stringify({ name: "a-user", private: true, type: "module" })
  )
  npmVersion = spawnSync("npm", ["--version"], { encoding: "utf8" }).stdout.trim()
  const installed = await run("npm", ["install", "--no-audit", "--no-fund", ...files], {}, INSTALL_TIMEOUT)
  installLog = installed.stdout + installed.stderr
  if (installed.code !== 0) throw new Error(`npm ${npmVersion} install of the tarballs failed:\n${installLog}`)
  api = await startFakeMessagesApi()
}, INSTALL_TIMEOUT + 60_000)

afterAll(async () => {
  await api?.close()
  if (dir !== undefined) fs.rmSync(dir, { recursive: true, force: true })
})

describe(`flotta installed from its tarballs (Node ${process.versions.node})`, () => {
  it("installs the eight packages; `npx flotta run --simulate` answers", async () => {
    for (
      const name of [
        "flotta",
        "@flotta/core",
        "@flotta/cli",
        "@flotta/mcp",
        "@flotta/scheduler",
        "@flotta/cluster",
        "@flotta/webhooks"
      ]
    ) {
      assert.isTrue(fs.existsSync(path.join(project, "node_modules", name, "package.json")), `${name} installed`)
    }
    const ran = await npx(["flotta", "run", "--simulate", "hi"])
    assert.strictEqual(ran.code, 0, `npm ${npmVersion}: ${ran.stderr}\n${installLog}`)
    assert.strictEqual(ran.stdout, "ECHO: hi\n")
    const doctor = await npx(["flotta", "doctor"])
    assert.match(doctor.stdout + doctor.stderr, /claude: \S+ \(from dependency\) is 2\.1\.332/)
    // Node 22.13 and later keep the store on node:sqlite, so no native build is needed; Node 20 on better-sqlite3.
    const [major = 0, minor = 0] = process.versions.node.split(".").map(Number)
    const driver = major > 22 || (major === 22 && minor >= 13) ? "node:sqlite" : "better-sqlite3"
    assert.include(doctor.stdout, `on ${driver}`)
  })

  it("`npx flotta serve --simulate` keeps its state in SQLite, which a restart reads back", async () => {
    const port = await freePort()
    fs.writeFileSync(
      path.join(project, "flotta.config.json"),
      JSON.stringify({ agents: [{ name: "scout" }], mcp: { port } })
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

  it("`npm install -g flotta` needs no flag: the global `flotta` answers", async () => {
    const prefix = path.join(dir, "global")
    const tarballs = fs.readdirSync(path.join(dir, "tarballs")).map((f) => path.join(dir, "tarballs", f))
    const installed = await run(
      "npm",
      ["install", "-g", "--prefix", prefix, "--no-audit", "--no-fund", ...tarballs],
      {},
      INSTALL_TIMEOUT
    )
    assert.strictEqual(installed.code, 0, installed.stderr)
    const ran = await run(path.join(prefix, "bin", "flotta"), ["run", "--simulate", "hi from anywhere"])
    assert.strictEqual(ran.code, 0, ran.stderr)
    assert.strictEqual(ran.stdout, "ECHO: hi from anywhere\n")
  }, INSTALL_TIMEOUT)

  it("a script that imports flotta drives an agent", async () => {
    fs.writeFileSync(
      path.join(project, "drive.mjs"),
      [
        `import { AgentNotFound, createFleet } from "flotta"`,
        `const fleet = createFleet()`,
        `await fleet.spawn("scout", { cwd: "." })`,
        `console.log(await fleet.ask("scout", "ECHO from a script"))`,
        `const missing = await fleet.ask("ghost", "hi").catch((e) => e)`,
        `console.log(missing instanceof AgentNotFound, missing._tag)`,
        `await fleet.shutdown()`
      ].join("\n")
    )
    const ran = await run(process.execPath, ["drive.mjs"], offlineEnv(api, dir))
    assert.strictEqual(ran.code, 0, ran.stderr)
    assert.strictEqual(ran.stdout, "ECHO: from a script\ntrue AgentNotFound\n")
  })
})
