/**
 * The README and the guides in docs/guides are the user's manual, so every command and program in them must work.
 * For each page, in a fresh project (a git repository, with `flotta init`'s config unless the page writes its
 * own): every ```sh line and every `$ ` line of a ```console block runs in order, as a newcomer would type it
 * (with `--simulate` where the command takes it; `serve` in the background), each with the exit code the page
 * shows (0 unless it shows `echo $?`); a ```json block marked `flotta.config.json` becomes the config; approval
 * ids a transcript shows stand for the ones the run makes, in order. Following a page loses no work: after each
 * line, each run worktree's work (commits, edits, new files) is read, and once the page is done each is still in
 * its worktree or a commit of its branch holds it (`WorkLog`). Code blocks that are whole programs run
 * against the simulator, and whole test files run under vitest. The install and test commands are checked against
 * what CI runs rather than run again from inside the test run.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { type ChildProcess, execFileSync, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { FLOTTA, ROOT, runFlotta, runProgram } from "./support/cli.js"
import { type Step, steps, words } from "./support/docBlocks.js"
import { startFakeMessagesApi } from "./support/FakeMessagesApi.js"
import { type FakeMessagesApi, offlineEnv } from "./support/FakeMessagesApi.js"
import { git, newRepo } from "./support/git.js"
import { freePort, waitUntil } from "./support/realCli.js"
import { eventually } from "./support/waiting.js"
import { WorkLog } from "./support/worktreeWork.js"

const GUIDES = path.join(ROOT, "docs", "guides")
const PAGES = [
  "README.md",
  ...fs.readdirSync(GUIDES).filter((f) => f.endsWith(".md")).sort().map((f) => path.join("docs", "guides", f))
]
const read = (page: string) => fs.readFileSync(path.join(ROOT, page), "utf8")

const SIMULATED = new Set(["run", "serve", "repl", "mcp"])
/** Commands that talk to a running serve (the rest run on their own). */
const CLIENT = new Set([
  "list",
  "status",
  "ask",
  "prompt",
  "result",
  "close",
  "spawn",
  "fork",
  "compact",
  "clear",
  "hibernate",
  "wake",
  "info",
  "interrupt",
  "wait",
  "broadcast",
  "approvals",
  "approve",
  "deny",
  "unpark",
  "schedule",
  "findings"
])
/** Commands that install or test the workspace: checked (the README's against CI), never run from here. */
const INSTALLS = /^npm (ci|test|i|install)\b/

/** A transcript's approval ids, which stand for the ones a run makes. */
const APPROVAL_ID = /\bap_[a-z0-9]{8}\b/g

let api: FakeMessagesApi
const background: Array<{ child: ChildProcess; exited: () => boolean }> = []
const scratch: Array<string> = []

beforeAll(async () => {
  api = await startFakeMessagesApi()
})
afterAll(async () => {
  for (const { child, exited } of background) if (!exited()) child.kill("SIGKILL")
  await api.close()
  for (const dir of scratch) fs.rmSync(dir, { recursive: true, force: true })
})

const GIT_ENV = {
  GIT_AUTHOR_NAME: "docs",
  GIT_AUTHOR_EMAIL: "docs@example.com",
  GIT_COMMITTER_NAME: "docs",
  GIT_COMMITTER_EMAIL: "docs@example.com"
}

/** A fresh project: a package.json committed on `main`, its own HOME, a free MCP port (the documented override). */
const newProject = async (name: string) => {
  const project = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), `flotta-docs-${name}-`)))
  scratch.push(project)
  fs.writeFileSync(path.join(project, "package.json"), JSON.stringify({ name: "docs-project", private: true }))
  const git = (...args: Array<string>) =>
    execFileSync("git", args, { cwd: project, env: { ...process.env, ...GIT_ENV }, stdio: "ignore" })
  git("init", "-q", "-b", "main")
  git("add", "package.json")
  git("commit", "-q", "-m", "start")
  const env: Record<string, string> = { FLOTTA_MCP_PORT: String(await freePort()), HOME: path.join(project, "home") }
  fs.mkdirSync(env["HOME"]!, { recursive: true })
  return { project, env }
}

/** Starts a long-running command (serve, repl) and returns once it is ready. */
const startBackground = async (
  project: string,
  env: Record<string, string>,
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

type Background = Awaited<ReturnType<typeof startBackground>>

const stop = async (server: Background) => {
  server.child.kill("SIGTERM")
  await waitUntil(() => server.out.exited, 20_000, "serve to stop")
  assert.strictEqual(server.out.code, 0, server.out.stderr)
}

/** A directory inside this repository, where `flotta`, `@flotta/*` and `@effect/vitest` resolve as for a user. */
const insideRepository = (name: string) => {
  const cache = path.join(ROOT, "node_modules", ".cache")
  fs.mkdirSync(cache, { recursive: true })
  const dir = fs.mkdtempSync(path.join(cache, `docs-${name}-`))
  scratch.push(dir)
  return dir
}

/** The server a `claude mcp add [options] <name> ...` line adds: the first word after `add` that is no option's. */
const serverName = (argv: ReadonlyArray<string>): string => {
  const valued = new Set(["-t", "--transport", "-H", "--header", "-e", "--env", "-s", "--scope"])
  const rest = argv.slice(argv.indexOf("add") + 1)
  for (let i = 0; i < rest.length; i++) {
    if (valued.has(rest[i]!)) i++
    else if (!rest[i]!.startsWith("-")) return rest[i]!
  }
  return ""
}

const commandsOf = (page: string) => steps(read(page)).filter((s) => s._tag === "Command" || s._tag === "Config")

/** Runs one page's commands in order, in a project of its own; returns the lines it ran and its worktrees' work. */
const runCommands = async (page: string, pageSteps: ReadonlyArray<Step>) => {
  const { env, project } = await newProject(path.basename(page, ".md"))
  const work = new WorkLog()
  const initialised = pageSteps.some((s) => s._tag === "Command" && / flotta init\b/.test(s.line))
  if (!initialised) assert.strictEqual((await runFlotta(project, ["init"], env)).code, 0)
  let server: Background | undefined
  const approvals = new Map<string, string>()
  const ran: Array<string> = []
  /** The real id a transcript's approval id stands for: the next approval the run made, in order. */
  const approvalFor = async (shown: string) => {
    const known = approvals.get(shown)
    if (known !== undefined) return known
    const taken = new Set(approvals.values())
    const list = await eventually(
      async () => {
        const result = await runFlotta(project, ["approvals", "--all", "--json"], env)
        const listed = JSON.parse(result.stdout) as {
          approvals: Array<{ readonly id: string; readonly requestedAt: string }>
        }
        return listed.approvals.filter((a) => !taken.has(a.id)).sort((a, b) =>
          a.requestedAt.localeCompare(b.requestedAt)
        )
      },
      (fresh) => fresh.length > 0,
      60_000,
      `an approval for ${shown}`
    )
    approvals.set(shown, list[0]!.id)
    return list[0]!.id
  }
  for (const step of pageSteps) {
    if (step._tag === "Config") {
      fs.writeFileSync(path.join(project, "flotta.config.json"), step.json)
      continue
    }
    if (step._tag !== "Command") continue
    let line = step.line
    for (const shown of line.match(APPROVAL_ID) ?? []) line = line.replace(shown, await approvalFor(shown))
    const argv = words(line)
    if (INSTALLS.test(line)) continue
    if (argv[0] === "npm" && argv[1] === "run") {
      const pkg = JSON.parse(read("package.json")) as { scripts: Record<string, string> }
      assert.isString(pkg.scripts[argv[2]!], `${page}: ${line}: no such script`)
      continue
    }
    if (argv[0] === "claude") {
      // `claude mcp add` writes the user's Claude Code config: here, in this project's own HOME.
      const home = env["HOME"]!
      const claude = path.join(ROOT, "node_modules", ".bin", "claude")
      const result = await runProgram(claude, argv.slice(1), {
        cwd: project,
        env: { HOME: home, CLAUDE_CONFIG_DIR: path.join(home, ".claude") }
      })
      assert.strictEqual(result.code, 0, `${page}: ${line}: ${result.stdout}${result.stderr}`)
      const saved = fs.readFileSync(path.join(home, ".claude", ".claude.json"), "utf8")
      assert.include(saved, `"${serverName(argv)}"`)
      ran.push(line)
      continue
    }
    assert.deepStrictEqual(argv.slice(0, 2), ["npx", "flotta"], `${page}: an unexpected command: ${line}`)
    const args = argv.slice(2)
    const command = args[0]!
    // A detached run runs in the serve, with the serve's model.
    const detached = command === "run" && (args.includes("--detach") || args.includes("--serve"))
    if (SIMULATED.has(command) && !detached && !args.includes("--simulate")) args.push("--simulate")
    if (detached) assert.isDefined(server, `${page}: ${line} needs \`flotta serve\` earlier on the page`)
    if (command === "serve") {
      if (server !== undefined) await stop(server)
      server = await startBackground(project, env, args, (out) => out.stderr.includes("flotta serve:"))
      work.record(project)
      ran.push(line)
      continue
    }
    if (command === "repl") {
      const repl = await startBackground(
        project,
        env,
        args,
        (out) => out.stdout.includes("flotta> ") && out.stderr.includes("Leave with .exit")
      )
      // The banner's first steps, which the page gives in the same words, then an agent of the page's own; the
      // REPL runs them in order and ends with its input.
      const steps = /Try: (.+)\. Leave with \.exit/.exec(repl.out.stderr)?.[1]?.split("; ") ?? []
      assert.isAbove(steps.length, 0, repl.out.stderr)
      assert.include(read(page).replace(/\s+/g, " "), steps.map((s) => `\`${s}\``).join(", then "), `${page}: ${line}`)
      repl.child.stdin!.end([...steps, "await fleet.spawn(\"from-the-docs\")"].join("\n") + "\n")
      await waitUntil(() => repl.out.exited, 60_000, "the REPL to run its input and end")
      assert.strictEqual(repl.out.code, 0, repl.out.stderr)
      assert.notInclude(repl.out.stdout, "Uncaught", `${page}: ${line}: the banner's first steps fail`)
      assert.include(repl.out.stdout, "name: 'from-the-docs'")
      ran.push(line)
      continue
    }
    if (CLIENT.has(command)) assert.isDefined(server, `${page}: ${line} needs \`flotta serve\` earlier on the page`)
    const result = await runFlotta(project, args, env)
    assert.strictEqual(
      result.code,
      step.exitCode,
      `${page}: ${line}\nstdout: ${result.stdout}\nstderr: ${result.stderr}`
    )
    if (command === "run" && step.exitCode === 0) {
      assert.isAbove(result.stdout.length, 0, `${page}: ${line} printed no answer`)
    } else if (command === "run") assert.match(result.stderr, /^flotta: [A-Z]\w+: /m, `${page}: ${line} said no error`)
    if (command === "init") assert.isTrue(fs.existsSync(path.join(project, "flotta.config.json")))
    work.record(project)
    ran.push(line)
  }
  if (server !== undefined) await stop(server)
  return { ran, work, lost: work.lost(project) }
}

describe("the README", () => {
  it("gives exactly the two commands CI runs: one installs, one tests", () => {
    const blocks = [...read("README.md").matchAll(/^```sh\n([\s\S]*?)^```$/gm)].map((m) => m[1]!.trim())
    assert.include(blocks, "npm ci\nnpm test", "a block of exactly the install and the test command")
    const ci = fs.readFileSync(path.join(ROOT, ".ci", "run"), "utf8")
    assert.match(ci, /^\s*(if\s+)?npm ci\b/m)
    assert.match(ci, /^\s*npm test\b/m)
    const pkg = JSON.parse(read("package.json")) as { scripts: Record<string, string> }
    assert.isString(pkg.scripts["test"])
    assert.isString(pkg.scripts["prepare"], "the install command compiles the packages")
    // After the install command, `npx flotta` is the compiled command (linked, never downloaded).
    const version = execFileSync("npx", ["--no-install", "flotta", "--version"], { cwd: ROOT, encoding: "utf8" })
    assert.strictEqual(version.trim(), JSON.parse(read(path.join("packages", "cli", "package.json"))).version)
  })

  it("stays a front door: about 250 lines, linking onward to the guides and the references", () => {
    const readme = read("README.md")
    assert.isAtMost(readme.split("\n").length, 260)
    for (const guide of fs.readdirSync(GUIDES)) assert.include(readme, `docs/guides/${guide}`)
    for (const reference of ["config", "cli", "mcp-tools"]) assert.include(readme, `docs/reference/${reference}.md`)
  })
})

describe("the docs' commands", () => {
  for (const page of PAGES) {
    const pageSteps = commandsOf(page)
    if (!pageSteps.some((s) => s._tag === "Command" && !INSTALLS.test(s.line))) continue
    it(`${page}: every shell command works as written (with --simulate)`, { timeout: 240_000 }, async () => {
      const { lost, ran, work } = await runCommands(page, pageSteps)
      assert.isAtLeast(ran.length, 1)
      assert.deepStrictEqual(lost, [], `${page}: following it lost work`)
      if (ran.some((line) => line.includes("--worktree"))) assert.isAbove(work.seen.size, 0, "its runs' worktrees")
    })
  }

  it("the simulator's guide names every word its scripted model knows", () => {
    const rules = fs.readFileSync(path.join(ROOT, "packages", "cli", "src", "SimulatorRules.ts"), "utf8")
    const keywords = [...rules.matchAll(/^\s*case "([A-Z][A-Z_]+)":/gm)].map((m) => m[1]!)
    assert.includeMembers(keywords, ["ECHO", "WRITE", "BASH", "LIMIT"], "the rules' keywords were read")
    const guide = read(path.join("docs", "guides", "simulator.md"))
    const missing = keywords.filter((keyword) => !new RegExp(`^\\| \`${keyword}( <|\`)`, "m").test(guide))
    assert.deepStrictEqual(missing, [], "a row of the guide's table for each")
  })

  it("the README runs the whole path: a run, init, the REPL, serve and its clients, MCP", () => {
    const lines = commandsOf("README.md").flatMap((s) => (s._tag === "Command" ? [s.line] : []))
    for (const needed of ["flotta run", "flotta init", "flotta repl", "flotta serve", "flotta ask", "claude mcp add"]) {
      assert.isTrue(lines.some((l) => l.includes(needed)), needed)
    }
  })
})

describe("the docs' check that no work is lost", () => {
  it("finds the work a removal dropped, and not the work a commit kept", () => {
    const repo = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "flotta-docs-work-")))
    scratch.push(repo)
    newRepo(repo)
    const worktree = (name: string) => {
      const at = path.join(repo, ".claude", "worktrees", name)
      git(repo, "worktree", "add", "-q", "-b", `worktree-${name}`, at)
      fs.writeFileSync(path.join(at, "README"), "edited\n")
      fs.writeFileSync(path.join(at, "new.md"), `${name}\n`)
      return at
    }
    const [dropped, saved, gone] = [worktree("dropped"), worktree("saved"), worktree("gone")]
    const work = new WorkLog()
    work.record(repo)
    assert.deepStrictEqual(work.lost(repo), [])
    // What gc --force did before it committed: the worktree removed with its changes.
    git(repo, "worktree", "remove", "--force", dropped)
    // What it does now: the work committed to the branch, then the worktree removed.
    git(saved, "add", "-A")
    git(saved, "commit", "-qm", "saved")
    git(repo, "worktree", "remove", saved)
    // Committed, but then the branch deleted.
    git(gone, "add", "-A")
    git(gone, "commit", "-qm", "saved, then gone")
    git(repo, "worktree", "remove", gone)
    git(repo, "branch", "-qD", "worktree-gone")
    assert.deepStrictEqual(work.lost(repo), [
      ".claude/worktrees/dropped (README, new.md): removed, and no commit of worktree-dropped holds its work",
      ".claude/worktrees/gone (README, new.md): removed, and its branch worktree-gone is gone"
    ])
  })
})

describe("the docs' programs", () => {
  const programs = PAGES.flatMap((page) =>
    steps(read(page)).filter((step) => step._tag === "Program").map((step, i) => ({ page, step, i: i + 1 }))
  )

  it("include the README's library example", () => {
    assert.isTrue(programs.some(({ page, step }) => page === "README.md" && step.code.includes("createFleet()")))
  })

  for (const { i, page, step } of programs) {
    it(`${page}: program ${i} (${step.language}) runs as written`, { timeout: 120_000 }, async () => {
      const dir = insideRepository("program")
      const file = path.join(dir, step.language === "js" ? "program.mjs" : "program.mts")
      fs.writeFileSync(file, step.code)
      const args = step.language === "js" ? [file] : ["--import", "tsx", file]
      const output = await runProgram(process.execPath, args, {
        cwd: dir,
        env: offlineEnv(api, path.join(dir, "claude")),
        timeout: 170_000
      })
      assert.strictEqual(output.code, 0, `${output.stdout}\n${output.stderr}`)
      // What each library example asks comes back from the simulator (it echoes).
      for (const [, asked] of step.code.matchAll(/console\.log\(await fleet\.ask\("[^"]+", "([^"]+)"\)\)/g)) {
        assert.include(output.stdout, `ECHO: ${asked}`)
      }
      // A line that says what it prints (`console.log(...)   // "hibernated": ...`) prints it.
      for (const [, said] of step.code.matchAll(/^console\.log\(.*\)\s*\/\/ "([^"]+)"/gm)) {
        assert.match(output.stdout, new RegExp(`^${said}$`, "m"), `the line that says it prints "${said}"`)
      }
      if (step.code.includes(`fleet.prompt("scout", "Summarize the README.")`)) {
        assert.include(output.stdout, "ECHO: Summarize the README.")
      }
    })
  }
})

describe("the docs' test files", () => {
  const files = PAGES.flatMap((page) => steps(read(page)).flatMap((s) => (s._tag === "TestFile" ? [{ page, s }] : [])))

  it("include the Testing guide's fleet.test.ts", () => {
    assert.isTrue(files.some(({ page, s }) => page.endsWith("testing.md") && s.name === "fleet.test.ts"))
  })

  for (const { page, s } of files) {
    it(`${page}: ${s.name} passes under vitest, as written`, { timeout: 180_000 }, async () => {
      const dir = insideRepository("test")
      fs.writeFileSync(path.join(dir, s.name), s.code)
      fs.writeFileSync(path.join(dir, "vitest.config.mjs"), "export default { test: { testTimeout: 60000 } }\n")
      const vitest = path.join(ROOT, "node_modules", "vitest", "vitest.mjs")
      const output = await runProgram(process.execPath, [vitest, "run", "--root", dir, "--reporter", "verbose"], {
        cwd: dir,
        env: { CI: "1", NO_COLOR: "1", FORCE_COLOR: "0" },
        timeout: 170_000
      })
      assert.strictEqual(output.code, 0, `${output.stdout}\n${output.stderr}`)
      const tests = (s.code.match(/^\s*it(\.\w+)?\(/gm) ?? []).length
      assert.isAbove(tests, 0)
      assert.match(output.stdout, new RegExp(`Tests\\s+${tests} passed \\(${tests}\\)`))
    })
  }
})
