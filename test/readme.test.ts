/**
 * The README is the user's manual, so every command in it must work: this test extracts its shell blocks and
 * runs each line as a newcomer would (in a fresh project directory, with `--simulate` where the command takes
 * it), runs the library example against the simulator, and runs the "Testing your fleet code" example as the
 * vitest file it is. The install and test commands are checked against
 * what CI runs rather than run again from inside the test run.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { type ChildProcess, execFileSync, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { FLOTTA, ROOT, runFlotta } from "./support/cli.js"
import { startFakeMessagesApi } from "./support/FakeMessagesApi.js"
import { type FakeMessagesApi, offlineEnv } from "./support/FakeMessagesApi.js"
import { freePort, waitUntil } from "./support/realCli.js"

const README = fs.readFileSync(path.join(ROOT, "README.md"), "utf8")

/** The fenced blocks of one language, in order. */
const blocks = (language: string) =>
  [...README.matchAll(new RegExp("```" + language + "\\n([\\s\\S]*?)```", "g"))].map((m) => m[1]!)

/** Shell lines: one command each, comments and blank lines dropped. */
const shellLines = () =>
  blocks("sh").flatMap((block) =>
    block.split("\n").map((l) => l.trim()).filter((l) => l.length > 0 && !l.startsWith("#"))
  )

/** Splits a command line into words, honouring single and double quotes (all the README uses). */
export const words = (line: string): Array<string> => {
  const out: Array<string> = []
  const pattern = /'([^']*)'|"((?:[^"\\]|\\.)*)"|(\S+)/g
  for (const m of line.matchAll(pattern)) out.push(m[1] ?? (m[2] !== undefined ? m[2].replace(/\\(.)/g, "$1") : m[3]!))
  return out
}

const SIMULATED = new Set(["run", "serve", "repl", "mcp"])
const CLIENT = new Set(["list", "status", "ask", "prompt", "result", "reports", "close"])

let project: string
let env: Record<string, string>
let api: FakeMessagesApi
const background: Array<{ child: ChildProcess; exited: () => boolean }> = []

beforeAll(async () => {
  project = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "flotta-readme-")))
  fs.writeFileSync(path.join(project, "package.json"), JSON.stringify({ name: "readme-project", private: true }))
  // The README's commands use the default MCP port; this run uses a free one through the documented override.
  env = { FLOTTA_MCP_PORT: String(await freePort()), HOME: path.join(project, "home") }
  fs.mkdirSync(env["HOME"]!, { recursive: true })
  api = await startFakeMessagesApi()
})
afterAll(async () => {
  for (const { child, exited } of background) if (!exited()) child.kill("SIGKILL")
  await api.close()
  fs.rmSync(project, { recursive: true, force: true })
})

/** Starts a long-running command (serve, repl) and returns once it is ready. */
const startBackground = async (
  args: ReadonlyArray<string>,
  ready: (out: { stdout: string; stderr: string }) => boolean
) => {
  const child = spawn(process.execPath, [FLOTTA, ...args], {
    cwd: project,
    env: { ...process.env, ...env },
    stdio: ["pipe", "pipe", "pipe"]
  })
  const out = { stdout: "", stderr: "", exited: false, code: null as number | null }
  child.stdout!.on("data", (d) => (out.stdout += d))
  child.stderr!.on("data", (d) => (out.stderr += d))
  child.on("exit", (code) => {
    out.exited = true
    out.code = code
  })
  background.push({ child, exited: () => out.exited })
  await waitUntil(() => ready(out) || out.exited, 60_000, `${args.join(" ")} to be ready`)
  assert.isFalse(out.exited, `${args.join(" ")} exited early: ${out.stderr}`)
  return { child, out }
}

/** Runs a Node script to its end, collecting what it prints. */
const runNode = (args: ReadonlyArray<string>, options: { readonly cwd: string; readonly env: NodeJS.ProcessEnv }) =>
  new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    const child = spawn(process.execPath, args, { ...options, stdio: ["ignore", "pipe", "pipe"] })
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (d) => (stdout += d))
    child.stderr.on("data", (d) => (stderr += d))
    child.on("close", (code) => resolve({ code, stdout, stderr }))
  })

describe("the README", () => {
  it("gives exactly the two commands CI runs: one installs, one tests", () => {
    const lines = shellLines()
    assert.deepStrictEqual(lines.slice(0, 2), ["npm ci", "npm test"])
    const ci = fs.readFileSync(path.join(ROOT, ".ci", "run"), "utf8")
    assert.match(ci, /^npm ci\b/m)
    assert.match(ci, /^npm test$/m)
    const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, "package.json"), "utf8")) as {
      scripts: Record<string, string>
    }
    assert.isString(pkg.scripts["test"])
    assert.isString(pkg.scripts["prepare"], "the install command compiles the packages")
    // After the install command, `npx flotta` is the compiled command (linked, never downloaded).
    const version = execFileSync("npx", ["--no-install", "flotta", "--version"], { cwd: ROOT, encoding: "utf8" })
    assert.strictEqual(
      version.trim(),
      JSON.parse(fs.readFileSync(path.join(ROOT, "packages", "cli", "package.json"), "utf8")).version
    )
  })

  // A dozen commands, each a Node start-up, and \`init\`'s fleet (three sessions) booted by repl and by serve.
  it("every other shell command works as written (with --simulate)", { timeout: 180_000 }, async () => {
    let server: Awaited<ReturnType<typeof startBackground>> | undefined
    const ran: Array<string> = []
    for (const line of shellLines().slice(2)) {
      const argv = words(line)
      if (argv[0] === "claude") {
        // `claude mcp add` writes the user's Claude Code config: here, in this test's own HOME.
        const home = path.join(project, "home")
        const claude = path.join(ROOT, "node_modules", ".bin", "claude")
        const result = await new Promise<{ code: number | null; out: string }>((resolve) => {
          const child = spawn(claude, argv.slice(1), {
            cwd: project,
            env: { ...process.env, HOME: home, CLAUDE_CONFIG_DIR: path.join(home, ".claude") },
            stdio: ["ignore", "pipe", "pipe"]
          })
          let out = ""
          child.stdout.on("data", (d) => (out += d))
          child.stderr.on("data", (d) => (out += d))
          child.on("close", (code) => resolve({ code, out }))
        })
        assert.strictEqual(result.code, 0, `${line}: ${result.out}`)
        const saved = fs.readFileSync(path.join(home, ".claude", ".claude.json"), "utf8")
        assert.include(saved, "\"flotta\"")
        ran.push(line)
        continue
      }
      assert.deepStrictEqual(argv.slice(0, 2), ["npx", "flotta"], `an unexpected command in the README: ${line}`)
      const args = argv.slice(2)
      const command = args[0]!
      if (SIMULATED.has(command) && !args.includes("--simulate")) args.push("--simulate")
      if (command === "serve") {
        server = await startBackground(args, (out) => out.stderr.includes("flotta serve:"))
        ran.push(line)
        continue
      }
      if (command === "repl") {
        const repl = await startBackground(args, (out) => out.stdout.includes("flotta> "))
        repl.child.stdin!.write("await fleet.spawn(\"from-readme\")\n")
        await waitUntil(() => (repl.out.stdout.match(/flotta> /g) ?? []).length >= 2, 60_000, "the REPL to answer")
        assert.include(repl.out.stdout, "name: 'from-readme'")
        repl.child.stdin!.write(".exit\n")
        await waitUntil(() => repl.out.exited, 20_000, "the REPL to exit")
        assert.strictEqual(repl.out.code, 0, repl.out.stderr)
        ran.push(line)
        continue
      }
      if (CLIENT.has(command)) assert.isDefined(server, `${line} needs \`flotta serve\` earlier in the README`)
      const result = await runFlotta(project, args, env)
      assert.strictEqual(result.code, 0, `${line}\nstdout: ${result.stdout}\nstderr: ${result.stderr}`)
      if (command === "run") assert.isAbove(result.stdout.length, 0, `${line} printed no answer`)
      if (command === "init") assert.isTrue(fs.existsSync(path.join(project, "flotta.config.json")))
      ran.push(line)
    }
    if (server !== undefined) {
      server.child.kill("SIGTERM")
      await waitUntil(() => server!.out.exited, 20_000, "serve to stop")
      assert.strictEqual(server.out.code, 0, server.out.stderr)
    }
    assert.isAtLeast(ran.length, 12)
  })

  it("the library example runs as written", async () => {
    const example = blocks("js").find((b) => b.includes("createFleet()"))
    assert.isDefined(example)
    // It must run where @flotta/core resolves: inside this repository.
    const cache = path.join(ROOT, "node_modules", ".cache")
    fs.mkdirSync(cache, { recursive: true })
    const dir = fs.mkdtempSync(path.join(cache, "readme-"))
    const file = path.join(dir, "quickstart.mjs")
    fs.writeFileSync(file, example!)
    const output = await runNode([file], {
      cwd: ROOT,
      env: { ...process.env, ...offlineEnv(api, path.join(project, "library")) }
    })
    fs.rmSync(dir, { recursive: true, force: true })
    assert.strictEqual(output.code, 0, output.stderr)
    assert.include(output.stdout, "ECHO: Read package.json and name the dependencies.")
    assert.include(output.stdout, "ECHO: Summarize the README.")
  })

  it("the \"Testing your fleet code\" example runs as written, under vitest", { timeout: 180_000 }, async () => {
    const example = blocks("ts").find((b) => b.startsWith("// fleet.test.ts"))
    assert.isDefined(example)
    // Inside this repository, where @flotta/* and @effect/vitest resolve as they do for a user who installed them.
    const cache = path.join(ROOT, "node_modules", ".cache")
    fs.mkdirSync(cache, { recursive: true })
    const dir = fs.mkdtempSync(path.join(cache, "readme-testing-"))
    fs.writeFileSync(path.join(dir, "fleet.test.ts"), example!)
    fs.writeFileSync(path.join(dir, "vitest.config.mjs"), "export default { test: { testTimeout: 60000 } }\n")
    const vitest = path.join(ROOT, "node_modules", "vitest", "vitest.mjs")
    const output = await runNode([vitest, "run", "--root", dir, "--reporter", "verbose"], {
      cwd: dir,
      env: { ...process.env, CI: "1", NO_COLOR: "1", FORCE_COLOR: "0" }
    })
    fs.rmSync(dir, { recursive: true, force: true })
    assert.strictEqual(output.code, 0, `${output.stdout}\n${output.stderr}`)
    assert.match(output.stdout, /Tests\s+5 passed \(5\)/)
  })
})
